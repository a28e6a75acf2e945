#!/bin/sh
# Stands in for the unit tests when configure did not find Check, so that
# `make check` fails loudly instead of silently running fewer tests.
echo "tests/no-check.sh: the unit tests need Check: apt-get install check (or scripts/deps install), then re-run configure" >&2
exit 1
