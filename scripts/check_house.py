#!/usr/bin/env python3
"""Fails when the code breaks a house rule of docs/ARCHITECTURE.md that a script can check.

The rules, over the library folders (LIBRARY below), cli/ and bench/e2e/:
  filesystem     no std::filesystem nor <filesystem> outside base/: libtorch.so exports its own
                 copy of it, and calls that bind to that copy can crash (remove_all jumps to null).
  ofstream       no std::ofstream (nor a writing std::fstream) in the library folders: every file
                 the library writes goes through base/ (AtomicFileWriter and its kin), which says
                 what survives a crash. Reading with std::ifstream is fine.
  test-folder    every library folder has tests/<folder>/CMakeLists.txt, which tests/CMakeLists.txt
                 adds.
  namespace      a file's namespace padless::X matches its folder: X is the folder or starts with
                 the folder and '::' (serve/http is padless::serve::http, cuda/kernels and
                 cuda/memory are padless::cuda); the same for tests/<folder>/, cli/ (padless::cli)
                 and bench/e2e/ (padless::bench::e2e). Namespaces outside padless are not checked.
  file-length    no library file over 600 lines except the CUDA kernel sources (.cu, .cuh); no cli/
                 file over 350 lines.
  function-length  no function over 100 lines, from the line of its body's '{' to its '}', in the
                 library folders (but the CUDA kernel sources), cli/ and bench/e2e/. A heuristic: comments and literals are
                 blanked, and a '{' outside any function whose declaration ends with ')' (and
                 qualifiers, a trailing return type or a constructor's initializer list) opens a
                 function; lambdas, local classes and blocks count toward the function around them.

  scripts/check_house.py [ROOT]        prints path:line: rule: detail per violation; exit 1 if any
  scripts/check_house.py --functions [ROOT]  every function's length, longest first (a report)
  scripts/check_house.py --self-test   proves on a scratch tree that each rule catches a violation
"""
import bisect
import os
import re
import sys

# The library folders, in the layer order of docs/ARCHITECTURE.md. OPTIONAL ones may not exist yet.
LIBRARY = ('base', 'tokenize', 'corpus', 'batching', 'cuda', 'distributed', 'models', 'model_files',
           'eval', 'train', 'serve', 'prune')
OPTIONAL = {'corpus'}
# Folders outside the library whose code the rules also cover, with the namespace their files use.
APPS = {'cli': 'cli', os.path.join('bench', 'e2e'): 'bench::e2e'}
SOURCE_SUFFIXES = ('.h', '.cc', '.cpp', '.cu', '.cuh')
KERNEL_SUFFIXES = ('.cu', '.cuh')
MAX_LIBRARY_FILE_LINES = 600
MAX_CLI_FILE_LINES = 350
MAX_FUNCTION_LINES = 100

# Comments, literals (raw strings too) and numbers (whose digit separators look like quotes), in one
# pass: the earliest match wins, so a quote inside a comment or a comment marker inside a string is
# never taken for what it is not.
_LEXEMES = re.compile(
    r'(?=[/"\'0-9uULR])'  # most characters start no lexeme: say so at once (2x faster)
    r'(?:(?P<line_comment>//[^\n]*)'
    r'|(?P<block_comment>/\*.*?\*/)'
    r'|(?P<raw>\b(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\(.*?\)(?P=delim)")'
    r'|(?P<string>"(?:\\.|[^"\\\n])*")'
    r'|(?P<number>\b\d[\w\']*)'
    r'|(?P<char>\'(?:\\.|[^\'\\\n])+\'))',
    re.S)


def _blank(match):
    """A lexeme's replacement: literals keep their quotes, and every lexeme keeps its newlines."""
    text = match.group(0)
    if match.group('number') is not None:
        return text
    newlines = '\n' * text.count('\n')
    if match.group('raw') is not None or match.group('string') is not None:
        return '""' + newlines
    if match.group('char') is not None:
        return "''"
    return ' ' + newlines


_DIRECTIVE = re.compile(r'^\s*#\s*(\w*)')


def strip_code(text):
    """A C++ file's code with comments, literals and preprocessor lines blanked; the same lines.

    Where the branches of an #if/#else differ in their braces (two signatures of one function,
    say), only the first branch is kept, so that the braces still pair up.
    """
    lines = _LEXEMES.sub(_blank, text).split('\n')
    # Blank the directives (continuation lines too), and note the conditional groups.
    groups, stack, continued = [], [], False
    for i, line in enumerate(lines):
        if continued:
            continued = line.endswith('\\')
            lines[i] = ''
            continue
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        continued = line.endswith('\\')
        lines[i] = ''
        word = m.group(1)
        if word in ('if', 'ifdef', 'ifndef'):
            stack.append([i])
        elif word in ('elif', 'else') and stack:
            stack[-1].append(i)
        elif word == 'endif' and stack:
            group = stack.pop()
            group.append(i)
            groups.append(group)
    for group in groups:  # inner groups come first; their branches are already settled
        branches = list(zip(group, group[1:]))
        deltas = [sum(l.count('{') - l.count('}') for l in lines[a + 1:b]) for a, b in branches]
        if any(deltas):
            for a, b in branches[1:]:
                for i in range(a + 1, b):
                    lines[i] = ''
    return '\n'.join(lines)


_TOKENS = re.compile(r'[{}();]')
_ACCESS = re.compile(r'^(?:(?:public|private|protected)\s*:(?!:)\s*)+')
_TEMPLATE_HEAD = re.compile(r'^template\s*<')
_CLASS_HEAD = re.compile(r'^(?:\[\[.*?\]\]\s*)*(?:typedef\s+)?(?:class|struct|union|enum)\b')
_NAMESPACE_HEAD = re.compile(r'^(?:inline\s+)?namespace\b|^extern\s*""')
_QUALIFIERS = re.compile(
    r'^(?:\s*(?:(?:const|volatile|noexcept|override|final|mutable|__device__|__host__)\b|&&|&))*')


_SCOPE_WORD = re.compile(r'\b(?:class|struct|union|enum|namespace)\b|^extern\s*""')


def _collapse_initializers(decl):
    """decl with each closed {...} (a brace initializer in a declaration) reduced to {}."""
    while True:
        collapsed = re.sub(r'\{[^{}]*\}', '{}', decl)
        if collapsed == decl:
            return decl
        decl = collapsed


def _skip_template_heads(decl):
    """decl without its leading template<...> heads (whose 'class T' is no class)."""
    while True:
        m = _TEMPLATE_HEAD.match(decl)
        if not m:
            return decl
        depth, i = 0, m.end() - 1
        while i < len(decl):
            depth += {'<': 1, '>': -1}.get(decl[i], 0)
            if depth == 0:
                break
            i += 1
        decl = decl[i + 1:].lstrip()


def _paren_groups(decl):
    """(open, close) index pairs of decl's outermost parentheses."""
    groups, depth, start = [], 0, 0
    for i, c in enumerate(decl):
        if c == '(':
            if depth == 0:
                start = i
            depth += 1
        elif c == ')' and depth:
            depth -= 1
            if depth == 0:
                groups.append((start, i))
    return groups


def _strip_noexcept_args(text):
    """text with noexcept(...) reduced to noexcept, so that qualifiers end in a word."""
    return re.sub(r'\bnoexcept\s*\([^()]*\)', 'noexcept', text)


def _after_qualifiers(text):
    """text (what follows a parameter list) without its leading qualifiers, stripped."""
    return _QUALIFIERS.sub('', _strip_noexcept_args(text)).strip()


def _parameter_list(decl):
    """The (open, close) of decl's parameter list when decl is a function's head, else None.

    The parameter list is the first outermost (...) followed by nothing but qualifiers, a
    trailing return type or a constructor's initializer list.
    """
    for start, end in _paren_groups(decl):
        rest = _after_qualifiers(decl[end + 1:])
        if rest in ('', 'try') or rest.startswith('->'):
            return start, end
        if rest.startswith(':') and not rest.startswith('::'):
            return start, end
    return None


def _is_function_head(decl):
    """Whether the declaration text before a '{' (outside any function) opens a function body."""
    if not decl or _CLASS_HEAD.match(decl) or _NAMESPACE_HEAD.match(decl):
        return False
    params = _parameter_list(decl)
    if params is None:
        return False
    tail = _after_qualifiers(decl[params[1] + 1:])
    if tail.startswith('->'):  # a trailing return type runs to the brace
        return True
    if tail in ('', 'try'):
        return True
    # A constructor's initializer list: its last initializer ends with ')' or a (blanked) '{}'.
    return tail.startswith(':') and (decl.endswith(')') or decl.endswith('{}'))


_NAME_BEFORE = re.compile(r'(operator\s*(?:\(\s*\)|[^\s(]+)'
                          r'|~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)'
                          r'\s*(?:<[^()]*>)?\s*$')


def _function_name(decl):
    """A readable name for the function whose head is decl."""
    start, end = _parameter_list(decl)
    m = _NAME_BEFORE.search(decl[:start])
    if not m:
        if decl[:start].rstrip().endswith(']'):
            m = re.search(r'(\w+)\s*=\s*\[', decl)
            return f'{m.group(1)} (lambda)' if m else '(lambda)'
        return '(unnamed)'
    name = re.sub(r'\s+', '', m.group(1))
    if re.fullmatch(r'(?:TYPED_)?TEST(?:_[FP])?', name):  # TEST(Suite, Name)
        return name + re.sub(r'\s+', ' ', decl[start:end + 1])
    return name


def functions(code):
    """Yields (name, line of the name, line of the body's '{', line of its '}') for each function.

    code comes from strip_code. Outside functions, a stack of scopes (namespaces, classes, brace
    initializers) and the declaration text since the last ';', '{' or '}' tell what each '{' opens.
    """
    scopes = []  # outside functions: 'scope' (namespace, class, enum) or 'init' (brace initializer)
    decl_start = 0
    paren_depth = 0
    body = None  # (name, name line, brace line) of the function being read
    depth_in_body = 0
    line_of = _LineIndex(code)
    for m in _TOKENS.finditer(code):
        c, pos = m.group(0), m.start()
        if body is not None:
            if c == '{':
                depth_in_body += 1
            elif c == '}':
                depth_in_body -= 1
                if depth_in_body == 0:
                    name, name_line, brace_line = body
                    yield name, name_line, brace_line, line_of(pos)
                    body = None
                    decl_start = pos + 1
            continue
        if c == '(':
            paren_depth += 1
        elif c == ')':
            paren_depth = max(0, paren_depth - 1)
        elif c == ';':
            if paren_depth == 0 and not (scopes and scopes[-1] == 'init'):
                decl_start = pos + 1
        elif c == '{':
            if paren_depth > 0 or (scopes and scopes[-1] == 'init'):
                scopes.append('init')
                continue
            raw = code[decl_start:pos]
            decl = _skip_template_heads(_ACCESS.sub('', ' '.join(raw.split())))
            decl = _collapse_initializers(decl)
            if _is_function_head(decl):
                offset = decl_start + len(raw) - len(raw.lstrip())
                name = _function_name(decl)
                name_at = raw.find(name.split('(')[0].split('::')[-1].lstrip('~'))
                name_line = line_of(decl_start + name_at) if name_at >= 0 else line_of(offset)
                body = (name, name_line, line_of(pos))
                depth_in_body = 1
            elif decl and (decl.endswith('=') or not _SCOPE_WORD.search(decl)):
                scopes.append('init')  # int x{1}, Foo kFoo = {...}, a member initializer
            else:
                scopes.append('scope')
                decl_start = pos + 1
        elif c == '}':
            kind = scopes.pop() if scopes else 'scope'
            if kind == 'scope':
                decl_start = pos + 1
            paren_depth = 0 if kind == 'scope' else paren_depth


class _LineIndex:
    """Maps an offset of a text to its 1-based line."""

    def __init__(self, text):
        self.starts = [0] + [m.end() for m in re.finditer(r'\n', text)]

    def __call__(self, offset):
        return bisect.bisect_right(self.starts, offset)


def _sources(root, folder):
    """Yields the paths (relative to root) of the C++ files under root/folder, sorted."""
    top = os.path.join(root, folder)
    for dirpath, dirnames, files in os.walk(top):
        dirnames.sort()
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(dirpath, name), root)


def _read(root, path):
    with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
        return f.read()


_FILESYSTEM = re.compile(r'\bstd\s*::\s*(?:experimental\s*::\s*)?filesystem\b'
                         r'|#\s*include\s*<(?:experimental/)?filesystem>')
_WRITING_STREAM = re.compile(r'\bstd\s*::\s*(w?ofstream|w?fstream|basic_o?fstream)\b')
_NAMESPACE = re.compile(r'\bnamespace\s+([A-Za-z_][\w:]*)?\s*\{|[{}]')


def _namespace_violations(path, code, expected):
    """Yields (line, detail) for each padless namespace of code that is not padless::expected."""
    stack = []  # the enclosing braces: a namespace's name, or None for any other brace
    line_of = _LineIndex(code)
    for m in _NAMESPACE.finditer(code):
        text = m.group(0)
        if text == '}':
            if stack:
                stack.pop()
            continue
        if text == '{':
            stack.append(None)
            continue
        name = m.group(1) or ''  # '' for an anonymous namespace
        if None in stack:  # not a namespace at file scope (cannot be, in valid C++)
            stack.append(None)
            continue
        full = '::'.join([s for s in stack if s] + ([name] if name else []))
        stack.append(name)
        outer = '::'.join(s for s in stack[:-1] if s)
        parts = full.split('::')
        if parts[0] != 'padless' or len(parts) < 2 or (outer.startswith('padless::')):
            continue  # not padless, bare padless, or inside an already checked padless::X
        inner = '::'.join(parts[1:])
        if inner != expected and not inner.startswith(expected + '::'):
            yield line_of(m.start()), f'namespace {full} in a file of {expected.split("::")[0]}/ ' \
                f'(expected padless::{expected} or below it)'


def _expected_namespace(path):
    """The namespace (under padless::) that a file at path should use, or None when unchecked."""
    parts = path.split(os.sep)
    if parts[0] == 'tests' and len(parts) > 2:
        parts = parts[1:]
    if parts[0] in LIBRARY:
        return parts[0]
    for folder, namespace in APPS.items():
        if any(path.startswith(top + os.sep) for top in (folder, os.path.join('tests', folder))):
            return namespace
    return None


def violations(root, folders=None):
    """Yields (path, line, rule, detail) for each house rule the tree at root breaks."""
    present = [f for f in LIBRARY if os.path.isdir(os.path.join(root, f))]
    tests_cmake = os.path.join(root, 'tests', 'CMakeLists.txt')
    added = set()
    if os.path.isfile(tests_cmake):
        added = set(re.findall(r'^\s*add_subdirectory\s*\(\s*([\w/]+)\s*\)',
                               _read(root, os.path.join('tests', 'CMakeLists.txt')), re.M))
    for folder in present:
        cmake = os.path.join('tests', folder, 'CMakeLists.txt')
        if not os.path.isfile(os.path.join(root, cmake)):
            yield folder, 1, 'test-folder', f'library folder {folder}/ has no {cmake}'
        elif folder not in added:
            yield os.path.join('tests', 'CMakeLists.txt'), 1, 'test-folder', \
                f'tests/{folder}/ is not added (add_subdirectory({folder}))'

    scanned = present + [a for a in APPS if os.path.isdir(os.path.join(root, a))]
    tests = [os.path.join('tests', f) for f in present + list(APPS)]
    for top in scanned + [t for t in tests if os.path.isdir(os.path.join(root, t))]:
        is_test = top.startswith('tests' + os.sep)
        in_library = top in LIBRARY
        for path in _sources(root, top):
            text = _read(root, path)
            code = strip_code(text)
            lines = code.split('\n')
            expected = _expected_namespace(path)
            if expected:
                for line, detail in _namespace_violations(path, code, expected):
                    yield path, line, 'namespace', detail
            if is_test:
                continue
            if top != 'base':
                for number, line in enumerate(_lines_with_includes(text, lines), 1):
                    if _FILESYSTEM.search(line):
                        yield path, number, 'filesystem', \
                            'std::filesystem outside base/ (use base/directory.h, file_kind.h, ...)'
            if in_library:
                for number, line in enumerate(lines, 1):
                    m = _WRITING_STREAM.search(line)
                    if m:
                        yield path, number, 'ofstream', \
                            f'std::{m.group(1)} writes a file outside base/ (use a base/ writer)'
            count = text.count('\n') + (0 if text.endswith('\n') or not text else 1)
            if in_library and not path.endswith(KERNEL_SUFFIXES) and count > MAX_LIBRARY_FILE_LINES:
                yield path, 1, 'file-length', f'{count} lines (at most {MAX_LIBRARY_FILE_LINES})'
            if top == 'cli' and count > MAX_CLI_FILE_LINES:
                yield path, 1, 'file-length', \
                    f'{count} lines (at most {MAX_CLI_FILE_LINES} in cli/)'
            # CUDA kernel sources are left out, as from the file-length rule: a kernel's body is
            # kept whole, where its loads, barriers and register use can be read (and ptxas's
            # report compared) in one place.
            functions_in = [] if path.endswith(KERNEL_SUFFIXES) else functions(code)
            for name, name_line, first, last in functions_in:
                length = last - first + 1
                if length > MAX_FUNCTION_LINES:
                    yield path, name_line, 'function-length', \
                        f'{name} is {length} lines (at most {MAX_FUNCTION_LINES})'


def _lines_with_includes(text, code_lines):
    """code_lines with the #include lines of text put back (strip_code blanks directives)."""
    original = text.split('\n')
    for number, line in enumerate(code_lines):
        raw = original[number] if number < len(original) else ''
        if not line and re.match(r'^\s*#\s*include\s*<', raw):
            yield raw
        else:
            yield line


def function_report(root):
    """Every function of the scanned folders with its length, longest first."""
    rows = []
    present = [f for f in LIBRARY if os.path.isdir(os.path.join(root, f))]
    for top in present + [a for a in APPS if os.path.isdir(os.path.join(root, a))]:
        for path in _sources(root, top):
            for name, name_line, first, last in functions(strip_code(_read(root, path))):
                rows.append((last - first + 1, path, name_line, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    for length, path, line, name in rows:
        print(f'{length:5d}  {path}:{line}: {name}')
    return 0


# The scratch tree of the self-test: one violation of each rule (path, line, rule) and code that
# looks like a violation but is none.
_CLEAN_FILE = '''\
#include <fstream>
// std::filesystem in a comment; "std::ofstream" below is in a string
namespace padless::{ns} {{
namespace {{
const char* kText = "std::ofstream {{ std::filesystem";
const char kBrace = '{{';
}}  // namespace
struct Options {{
  int x = 0;
  int Get() const {{ return x; }}
}};
template <class T>
T Identity(T t) {{ return t; }}
Foo::Foo(int a) : a_(a), b_{{a}} {{
  std::ifstream in("x");
}}
}}  // namespace padless::{ns}
'''


def _long_function(name, lines, lambdas=False):
    """A function of the given length in lines, with blocks, a lambda and a local struct inside."""
    body = ['int ' + name + '(const std::vector<int>& v) {']
    inner = ['  if (v.empty()) {', '    return 0;', '  }',
             '  auto add = [](int a, int b) {', '    return a + b;', '  };',
             '  struct Local { int F() const { return 1; } };',
             '  for (int i : v) {', '    (void)add(i, i);', '  }'] if lambdas else []
    inner += ['  int x = 0;'] * (lines - 3 - len(inner))
    return body + inner + ['  return 1;', '}']


def self_test():
    """Builds a scratch tree that breaks each rule once, and checks that exactly those are found."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), 'w') as f:
                f.write(text)

        cmake = ''
        for folder in LIBRARY:
            if folder in OPTIONAL:
                continue  # an optional folder may be missing
            ns = folder
            write(os.path.join(folder, 'ok.cc'), _CLEAN_FILE.format(ns=ns))
            if folder != 'train':
                write(os.path.join('tests', folder, 'CMakeLists.txt'), '')
                cmake += f'add_subdirectory({folder})\n'
            write(os.path.join('tests', folder, 'ok_test.cc'),
                  _CLEAN_FILE.format(ns=ns + '::testing'))
        write(os.path.join('tests', 'CMakeLists.txt'),
              cmake.replace('add_subdirectory(eval)\n', ''))
        # The allowed forms: serve::http, cuda's subfolders, nested namespaces.
        write(os.path.join('serve', 'http', 'ok.cc'), _CLEAN_FILE.format(ns='serve::http'))
        write(os.path.join('cuda', 'kernels', 'src', 'ok.cc'), _CLEAN_FILE.format(ns='cuda'))
        write(os.path.join('base', 'nested.h'), 'namespace padless {\nnamespace base {\n}\n}\n'
              'namespace other { namespace padless_x {} }\n')
        write(os.path.join('base', 'fs.cc'),
              '#include <filesystem>\nnamespace fs = std::filesystem;\n')
        # One violation of each rule.
        write(os.path.join('tokenize', 'fs.cc'), '#include <filesystem>\n')  # :1 filesystem
        write(os.path.join('cli', 'fs.cc'), 'namespace padless::cli {\n'
              'bool E() { return std::filesystem::exists("x"); }\n}\n')  # :2 filesystem
        write(os.path.join('eval', 'out.cc'), '#include <fstream>\n\nstd::ofstream out;\n')  # :3
        write(os.path.join('train', 'wrong_ns.cc'), 'namespace padless::models {\n}\n')  # :1
        write(os.path.join('tests', 'serve', 'http', 'wrong_ns_test.cc'),
              'namespace padless {\nnamespace batching::testing {\n}\n}\n')  # :2 namespace
        write(os.path.join('cuda', 'memory', 'src', 'wrong_ns.cc'),
              'namespace padless::cudax {\n}\n')  # :1 namespace
        write(os.path.join('prune', 'big.cc'), 'int x;\n' * 601)  # file-length
        write(os.path.join('cuda', 'kernels', 'src', 'big.cu'), 'int x;\n' * 900)  # a kernel: fine
        write(os.path.join('cli', 'big.cc'), 'namespace padless::cli {}\n' + 'int x;\n' * 350)
        # Two signatures of one function under #if/#else (only one brace pairs up), then a
        # function of 100 lines (fine) and one of 101, both with blocks, a lambda and a local
        # struct inside.
        write(os.path.join('models', 'long.cc'),
              '\n'.join(['namespace padless::models {', '#ifdef X', 'void F(int a) {', '#else',
                         'void F() {', '#endif', '}'] + _long_function('Fine', 100, True)
                        + _long_function('TooLong', 101, True) + ['}', '']))
        # A constructor with noexcept and an initializer list that has braces of its own.
        write(os.path.join('bench', 'e2e', 'long.cc'),
              '\n'.join(['namespace padless::bench::e2e {', 'class Runner {', ' public:',
                         '  Runner(int a) noexcept', '      : a_(a), b_{a} {']
                        + ['    a_ += 1;'] * 99 + ['  }', '  int a_;', '  int b_;', '};', '}', '']))
        expected = [
            ('bench/e2e/long.cc', 4, 'function-length'),
            ('cli/big.cc', 1, 'file-length'),
            ('cli/fs.cc', 2, 'filesystem'),
            ('cuda/memory/src/wrong_ns.cc', 1, 'namespace'),
            ('eval/out.cc', 3, 'ofstream'),
            ('models/long.cc', 108, 'function-length'),
            ('prune/big.cc', 1, 'file-length'),
            ('tests/CMakeLists.txt', 1, 'test-folder'),
            ('tests/serve/http/wrong_ns_test.cc', 2, 'namespace'),
            ('tokenize/fs.cc', 1, 'filesystem'),
            ('train', 1, 'test-folder'),
            ('train/wrong_ns.cc', 1, 'namespace'),
        ]
        found = sorted((p.replace(os.sep, '/'), n, r) for p, n, r, _ in violations(root))
        if found != expected:
            print('check_house self-test: expected')
            for row in expected:
                print(f'  {row}')
            print('got')
            for row in found:
                print(f'  {row}')
            return 1
        # A missing core folder is an error, a missing optional one is not.
        if check(root, quiet=True) != 1:
            print('check_house self-test: the scratch tree passed')
            return 1
        os.rename(os.path.join(root, 'eval'), os.path.join(root, 'eval_gone'))
        if _missing_core_folders(root) != ['eval']:
            print('check_house self-test: a missing eval/ was not noticed')
            return 1
    print(f'check_house self-test: each of the {len(set(r for _, _, r in expected))} rules '
          'catches its violation')
    return 0


def _missing_core_folders(root):
    return [f for f in LIBRARY if f not in OPTIONAL and not os.path.isdir(os.path.join(root, f))]


def check(root, quiet=False):
    missing = _missing_core_folders(root)
    if missing:
        print(f'check_house: no folder {", ".join(missing)} under {root}', file=sys.stderr)
        return 1
    bad = list(violations(root))
    if not quiet:
        for path, number, rule, detail in bad:
            print(f'{path}:{number}: {rule}: {detail}')
        print(f'check_house: {len(bad)} violation(s) of the house rules')
    return 1 if bad else 0


def main():
    args = sys.argv[1:]
    if args == ['--self-test']:
        return self_test()
    default_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    if args[:1] == ['--functions']:
        return function_report(args[1] if len(args) > 1 else default_root)
    return check(args[0] if args else default_root)


if __name__ == '__main__':
    sys.exit(main())
