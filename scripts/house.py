#!/usr/bin/env python3
"""The figures of docs/architecture.md, read off src/, and the rules it
states that a script can check:

  figures  the largest .cc files, the longest functions (how many over 60
           and over 100 lines), and, where the `duplicates` command is
           installed, the pairs of places in src/ that share six or more
           lines of the same shape;
  rules    1. layers: no #include points upward or sideways against the
              layer order named in LAYERS below (docs/architecture.md draws it);
           2. layout: no string literal outside src/layout/ spells a path in
              .phoenix/ or a ref Phoenix writes (".phoenix...", "/.phoenix...",
              "refs/phoenix/...", "refs/heads/phoenix/..."): layout/ names them;
           3. thin mains: every src/cli/main_*.cc is at most MAIN_MAX lines;
           4. libgit2: <git2.h> is included under src/gitx/ only, and
              gitx/libgit2.h (libgit2's API with its owners) by gitx/ and
              sandbox/ only;
           5. sizes: no .cc in src/ over FILE_MAX lines, no function over
              FUNCTION_MAX lines (what the code met when the limits were set).

  scripts/house.py [--top N] [--no-duplicates]     exit 1 when a rule is broken
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(HERE, "src")

# Lowest first. A folder may include its own headers and those of any
# folder below it, never one above; folders on one line are peers and
# do not include one another.
LAYERS = [
    ["util"],
    ["gitx", "image", "trace"],
    ["layout"],
    ["checks"],
    ["config"],
    ["agent", "journal"],
    ["setup", "sandbox", "snapshot"],
    ["fixers"],
    ["engine"],
    ["hook", "loop", "report"],
    ["cli"],
]
RANK = {folder: i for i, row in enumerate(LAYERS) for folder in row}

MAIN_MAX = 60
FILE_MAX = 600
FUNCTION_MAX = 80
# Where libgit2 may be seen: <git2.h> itself, and the header that brings it.
GIT2_FOLDERS = {"gitx"}
LIBGIT2_H_FOLDERS = {"gitx", "sandbox"}
# A literal that spells one of Phoenix's paths or refs (layout/ names them).
OWN_PATH = re.compile(r"^(/?\.phoenix|refs/phoenix/|refs/heads/phoenix/)")


def strip(text):
    """Comments, string and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def literals(text):
    """(line, content) of every string literal outside comments, raw ones too."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append((line, text[i + m.end():end if end >= 0 else n]))
            line += text.count("\n", i, j)
            i = j
        elif c == "'" and i > 0 and text[i - 1].isalnum():
            i += 1  # a digit separator (1'000)
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                out.append((line, text[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


SIG = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->\s*[\w:<>,\s\*&]+)?$")
INIT = re.compile(r"\)\s*:\s*[\w:]+[({]")  # a constructor's initialiser list


def functions(path):
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    stack = []  # for each open brace: ("fn", name, line) or ("scope", None, line)
    head = ""   # text since the last ; { or } at this level
    line = 1
    results = []
    for ch in text:
        if ch == "\n":
            line += 1
        if ch == "{":
            inside_fn = any(k == "fn" for k, _, _ in stack)
            h = " ".join(head.split())
            if not inside_fn and (SIG.search(h) or INIT.search(h)) and "(" in h and not re.search(r"\b(namespace|class|struct|enum|union)\b[^()]*$", h):
                m = re.search(r"([~\w:]+(?:operator\W+)?)\s*\((?!.*\)\s*\()", h) or re.search(r"([~\w:]+)\s*\(", h)
                stack.append(("fn", m.group(1) if m else "?", line))
            else:
                stack.append(("scope", None, line))
            head = ""
        elif ch == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind == "fn":
                    results.append((line - start + 1, name, start))
            head = ""
        elif ch == ";":
            head = ""
        else:
            head += ch
    return results


def duplicates_line():
    """The first line of `duplicates` over src/ (how many pairs), or why not."""
    if not shutil.which("duplicates"):
        return "duplicates: the command is not installed (it counts pairs of places sharing 6+ lines)"
    try:
        out = subprocess.run(["duplicates", "--repo", SRC, "--most", "200", "--seconds", "120"],
                             capture_output=True, text=True, timeout=180).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"duplicates: did not run ({e})"
    lines = out.splitlines()
    return "duplicates in src/: " + (lines[0] if lines else "(no answer)")


def main():
    top = 10
    if "--top" in sys.argv:
        top = int(sys.argv[sys.argv.index("--top") + 1])
    fns, up, sizes, own_paths, long_mains, git2 = [], [], [], [], [], []
    for root, _, files in os.walk(SRC):
        for f in sorted(files):
            if not f.endswith((".cc", ".h")):
                continue
            p = os.path.join(root, f)
            rel = os.path.relpath(p, SRC)
            folder = rel.split(os.sep)[0]
            text = open(p, encoding="utf-8", errors="replace").read()
            lines = text.splitlines()
            if f.endswith(".cc"):
                sizes.append((len(lines), rel))
                for length, name, start in functions(p):
                    fns.append((length, f"{rel}:{start}", name))
            if folder == "cli" and f.startswith("main_") and f.endswith(".cc") and len(lines) > MAIN_MAX:
                long_mains.append(f"{rel}: {len(lines)} lines")
            if folder != "layout":
                for n, lit in literals(text):
                    if OWN_PATH.match(lit):
                        own_paths.append(f'{rel}:{n}: "{lit}"')
            for n, l in enumerate(lines, 1):
                if re.match(r"\s*#\s*include\s+<git2[./]", l) and folder not in GIT2_FOLDERS:
                    git2.append(f"{rel}:{n}: {l.strip()}")
                if re.match(r'\s*#\s*include\s+"gitx/libgit2\.h"', l) and folder not in LIBGIT2_H_FOLDERS:
                    git2.append(f"{rel}:{n}: {l.strip()}")
                m = re.match(r'\s*#\s*include\s+"([\w]+)/', l)
                if not m or m.group(1) == folder or folder not in RANK or m.group(1) not in RANK:
                    continue
                if RANK[m.group(1)] >= RANK[folder]:
                    up.append(f"{rel}:{n}: {folder} includes {l.split('include', 1)[1].strip()} "
                              f"({m.group(1)} is {'a peer' if RANK[m.group(1)] == RANK[folder] else 'above'})")
    fns.sort(reverse=True)
    sizes.sort(reverse=True)
    print(f"the {min(top, 5)} largest .cc files in src/ (lines):")
    for length, rel in sizes[:min(top, 5)]:
        print(f"  {length:5d}  {rel}")
    print(f"the {top} longest functions in src/ (lines, from the opening brace's line to the closing one's):")
    for length, where, name in fns[:top]:
        print(f"  {length:4d}  {name}  {where}")
    print(f"functions over 60 lines: {sum(1 for f in fns if f[0] > 60)}, over 100 lines: "
          f"{sum(1 for f in fns if f[0] > 100)}, of {len(fns)}")
    if "--no-duplicates" not in sys.argv:
        print(duplicates_line())
    print("rules:")
    unknown = sorted({d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d)) and d not in RANK})
    if unknown:
        print("  folders not in the layer order: " + ", ".join(unknown))
    broken = 0

    def rule(name, found):
        nonlocal broken
        print(f"  {name}: {len(found)}")
        for x in found:
            print("    " + x)
        broken += bool(found)

    rule("include arrows pointing upward or sideways (0 expected)", up)
    rule("literals outside src/layout/ spelling a path in .phoenix/ or a ref of Phoenix's (0 expected)", own_paths)
    rule(f"src/cli/main_*.cc longer than {MAIN_MAX} lines (0 expected)", long_mains)
    rule("libgit2 seen outside gitx/ (<git2.h>) or outside gitx/ and sandbox/ (gitx/libgit2.h) (0 expected)", git2)
    rule(f".cc files in src/ over {FILE_MAX} lines (0 expected)",
         [f"{rel}: {length} lines" for length, rel in sizes if length > FILE_MAX])
    rule(f"functions in src/ over {FUNCTION_MAX} lines (0 expected)",
         [f"{where}: {name}, {length} lines" for length, where, name in fns if length > FUNCTION_MAX])
    return 1 if broken or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
