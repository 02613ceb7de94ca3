#!/usr/bin/env bash
# Runs a command as on a machine without a CUDA toolkit: in a private mount namespace, an empty
# directory hides /usr/local/cuda and every /usr/local/cuda-*, and every other directory on PATH that
# holds an nvcc is replaced by links to all its other entries. Nothing changes outside the command.
#   scripts/without_cuda_toolkit.sh COMMAND [ARG...]
# Exit code: the command's, or 3 when this machine cannot make a mount namespace (unshare needs
# root, or unprivileged user namespaces).
set -euo pipefail
if (($# == 0)); then
  echo "usage: $0 COMMAND [ARG...]" >&2
  exit 2
fi
hide=$(mktemp -d)
trap 'rm -rf "$hide"' EXIT
mkdir "$hide/dir"
unshare_flags=(--mount)
[[ $(id -u) -ne 0 ]] && unshare_flags+=(--map-root-user)
if ! unshare "${unshare_flags[@]}" true 2>/dev/null; then
  echo "$0: cannot create a mount namespace here (unshare ${unshare_flags[*]})" >&2
  exit 3
fi
# shellcheck disable=SC2016
unshare "${unshare_flags[@]}" bash -c '
  set -euo pipefail
  hide=$1; shift
  for d in /usr/local/cuda /usr/local/cuda-*; do
    [[ -d $d ]] && mount --bind "$hide/dir" "$d"
  done
  # An nvcc elsewhere on PATH (a wrapper such as /usr/local/bin/nvcc): its directory is replaced
  # by a copy of links to everything but nvcc.
  for f in $(type -ap nvcc); do
    dir=$(dirname "$f")
    original=$(mktemp -d "$hide/original.XXXXXX")
    shadow=$(mktemp -d "$hide/shadow.XXXXXX")
    chmod 755 "$shadow"
    mount --bind "$dir" "$original"  # keeps the entries reachable once $dir is covered
    for entry in "$original"/* "$original"/.[!.]*; do
      name=$(basename "$entry")
      [[ -e $entry || -L $entry ]] && [[ $name != nvcc ]] && ln -s "$entry" "$shadow/$name"
    done
    mount --bind "$shadow" "$dir"
  done
  hash -r
  if [[ -n $(type -P nvcc) ]] || [[ -n $(ls -A /usr/local/cuda 2>/dev/null) ]]; then
    echo "without_cuda_toolkit.sh: the CUDA toolkit is still visible" >&2
    exit 3
  fi
  exec "$@"' bash "$hide" "$@"
