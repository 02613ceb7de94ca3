#!/usr/bin/env python3
"""Fails when an #include "padless/..." runs against the layer order of docs/ARCHITECTURE.md.

Each library folder may include the headers of the folders listed for it below (and its own);
nothing else. The order: base <- tokenize <- corpus <- batching <- models (beside cuda) <- model_files
<- eval <- train <- prune; serve uses model_files, models and batching; train and serve never include
each other, nor does prune include serve;
distributed uses only LibTorch and base. cli/, bench/ and tests/ sit on top and may include any.
A folder's private headers (included without the padless/ prefix) are its own business.

  scripts/check_layers.py [ROOT]      exit 0 when every include is allowed, 1 otherwise
  scripts/check_layers.py --self-test  proves on a scratch tree that a wrong include fails
"""
import os
import re
import sys

# folder -> the header folders (padless/<name>/...) that its files may include, besides its own.
ALLOWED = {
    'base': set(),
    'tokenize': {'base'},
    'corpus': {'tokenize', 'base'},
    'batching': {'corpus', 'tokenize', 'base'},
    'cuda': {'base'},
    'distributed': {'base'},
    'models': {'cuda', 'batching', 'corpus', 'tokenize', 'base'},
    'model_files': {'models', 'cuda', 'batching', 'corpus', 'tokenize', 'base'},
    'eval': {'model_files', 'models', 'distributed', 'cuda', 'batching', 'corpus', 'tokenize',
             'base'},
    'train': {'eval', 'model_files', 'models', 'distributed', 'cuda', 'batching', 'corpus',
              'tokenize', 'base'},
    'serve': {'model_files', 'models', 'cuda', 'batching', 'corpus', 'tokenize', 'base'},
    'prune': {'train', 'eval', 'model_files', 'models', 'distributed', 'cuda', 'batching',
              'corpus', 'tokenize', 'base'},
}
SOURCE_SUFFIXES = ('.h', '.cc', '.cu', '.cuh')
INCLUDE = re.compile(r'^\s*#\s*include\s+"padless/([a-z_]+)/')


def violations(root):
    """Yields (path, line number, included folder) for each include against the order."""
    for folder, allowed in sorted(ALLOWED.items()):
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding='utf-8', errors='replace') as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) != folder and m.group(1) not in allowed:
                            yield os.path.relpath(path, root), number, m.group(1)


def self_test():
    """A scratch tree with one include against the order (train -> serve) and one allowed."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        for folder in ALLOWED:
            os.makedirs(os.path.join(root, folder))
        with open(os.path.join(root, 'train', 'a.cc'), 'w') as f:
            f.write('#include "padless/eval/evaluation.h"\n#include "padless/serve/x.h"\n')
        found = list(violations(root))
        if found != [(os.path.join('train', 'a.cc'), 2, 'serve')]:
            print(f'check_layers self-test: expected one violation at train/a.cc:2, got {found}')
            return 1
    print('check_layers self-test: a wrong include is caught')
    return 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    missing = [f for f in ALLOWED if not os.path.isdir(os.path.join(root, f))]
    if missing:
        print(f'check_layers: no folder {", ".join(missing)} under {root}', file=sys.stderr)
        return 1
    bad = list(violations(root))
    for path, number, target in bad:
        folder = path.split(os.sep)[0]
        print(f'{path}:{number}: {folder}/ may not include padless/{target}/ '
              f'(allowed: {", ".join(sorted(ALLOWED[folder])) or "none"})')
    print(f'check_layers: {len(bad)} include(s) against the layer order')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
