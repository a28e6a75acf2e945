#!/bin/sh
# Generates configure and Makefile.in; these are not committed.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force
