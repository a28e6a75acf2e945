#!/bin/sh
# Finds (or installs) what the torch reference needs and prints the Python
# to run it with. Debian's python3-torch imports under /usr/bin/python3 (not
# a pyenv python3 that may come first on PATH); Hugging Face transformers
# comes from PyPI on top of it, pinned below 4.40 (the last releases that
# run on torch 1.13). Exit 77 when no Python with torch can be had; a
# missing transformers is only reported (the torch.nn reference still runs).
#   CADRE_NO_INSTALL=1 tests/reference/setup.sh   finds, installs nothing
set -u
has_torch() { "$1" -c 'import torch' >/dev/null 2>&1; }

py=
for cand in /usr/bin/python3 python3; do
	if command -v "$cand" >/dev/null 2>&1 && has_torch "$cand"; then
		py=$(command -v "$cand")
		break
	fi
done
if [ -z "$py" ] && [ "${CADRE_NO_INSTALL:-0}" != 1 ] && [ "$(id -u)" -eq 0 ] &&
    command -v apt-get >/dev/null 2>&1; then
	echo "tests/reference/setup.sh: installing python3-torch (apt-get)" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-torch >&2 ||
	    { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-torch >&2; }
	has_torch /usr/bin/python3 && py=/usr/bin/python3
fi
if [ -z "$py" ]; then
	echo "tests/reference/setup.sh: no Python with torch (apt-get install python3-torch, or scripts/deps install)" >&2
	exit 77
fi
if ! "$py" -c 'import transformers, safetensors' >/dev/null 2>&1 &&
    [ "${CADRE_NO_INSTALL:-0}" != 1 ]; then
	echo "tests/reference/setup.sh: installing transformers<4.40 and safetensors from PyPI" >&2
	"$py" -m pip install -q --break-system-packages 'transformers<4.40' safetensors >&2 ||
	    echo "tests/reference/setup.sh: transformers could not be installed: comparing with the torch.nn reference only" >&2
fi
echo "$py"
