#!/usr/bin/env python3
"""Writes or checks the settings documentation from src/base/settings_table.def.

The table's rows are the only declaration of nbrcoll's settings; the README's
settings table and nbrcoll.h's list are generated from them, between the
markers <!-- settings:begin --> and <!-- settings:end -->.

  settings-doc.py --print readme|header   the generated block, to stdout
  settings-doc.py --write                 rewrite the blocks in place
  settings-doc.py --check                 exit 1, naming each setting, where a
                                          file disagrees with the table
  settings-doc.py --env-names             the environment names, one a line

--readme PATH, --header PATH and --table PATH name other files (default: the
repository's); --only readme|header limits --write and --check to one.
"""

import argparse
import os
import re
import sys
import textwrap

BEGIN = "<!-- settings:begin -->"
END = "<!-- settings:end -->"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The row macros and their arguments after the id.
FIELDS = {
    "NBR_INT_SETTING": ("key", "env", "default", "min", "max", "doc"),
    "NBR_BOOL_SETTING": ("key", "env", "default", "doc"),
    "NBR_STRING_SETTING": ("key", "env", "default", "what", "doc"),
    "NBR_ENUM_SETTING": ("key", "env", "default", "words", "doc"),
}
INT_MAX = 2**31 - 1

TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<word>[A-Za-z_][A-Za-z0-9_]*)'
                   r'|(?P<num>-?\d+)|(?P<punct>[(),]))')


class TableError(Exception):
    pass


def strip_comments(text):
    """Blanks out comments (not string literals that hold "/*"), keeping lines."""
    def blank(m):
        if m.group(0).startswith('"'):
            return m.group(0)
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'"(?:[^"\\\n]|\\.)*"|/\*.*?\*/|//[^\n]*', blank, text, flags=re.S)


def unescape(literal):
    return bytes(literal[1:-1], "utf-8").decode("unicode_escape")


def parse_args_at(text, pos, line_of):
    """The arguments of the call whose '(' is at pos, each a Python value."""
    args, current, depth = [], [], 0
    while True:
        m = TOKEN.match(text, pos)
        if not m:
            raise TableError(f"line {line_of(pos)}: cannot read the row here")
        pos = m.end()
        if m.group("punct") == "(":
            depth += 1
            if depth == 1:
                continue
        elif m.group("punct") == ")":
            depth -= 1
            if depth == 0:
                args.append(current)
                break
        elif m.group("punct") == "," and depth == 1:
            args.append(current)
            current = []
            continue
        current.append(m)
    values = []
    for tokens in args:
        kinds = {t.lastgroup for t in tokens}
        if kinds == {"str"}:  # adjacent literals concatenate, as in C
            values.append("".join(unescape(t.group("str")) for t in tokens))
        elif len(tokens) == 1 and tokens[0].group("num"):
            values.append(int(tokens[0].group("num")))
        elif len(tokens) == 1 and tokens[0].group("word") == "NULL":
            values.append(None)
        elif len(tokens) == 1 and tokens[0].group("word") == "INT_MAX":
            values.append(INT_MAX)
        elif len(tokens) == 1 and tokens[0].group("word"):
            values.append(tokens[0].group("word"))  # the id
        else:
            raise TableError(f"line {line_of(pos)}: an argument is not a literal")
    return values, pos


def read_table(path):
    raw = open(path, encoding="utf-8").read()
    text = strip_comments(raw)
    line_of = lambda pos: text.count("\n", 0, pos) + 1
    rows = []
    for m in re.finditer(r"^(NBR_(?:INT|BOOL|STRING|ENUM)_SETTING)\s*(?=\()", text, re.M):
        macro = m.group(1)
        values, _ = parse_args_at(text, m.end(), line_of)
        fields = FIELDS[macro]
        if len(values) != len(fields) + 1:
            raise TableError(f"{path}:{line_of(m.start())}: {macro} takes "
                             f"{len(fields) + 1} arguments, has {len(values)}")
        row = dict(zip(fields, values[1:]))
        row["id"] = values[0]
        row["type"] = macro.split("_")[1].lower()
        check_row(row, f"{path}:{line_of(m.start())}")
        rows.append(row)
    if not rows:
        raise TableError(f"{path}: no rows")
    for field in ("id", "env", "key"):
        seen = [r[field] for r in rows if r[field]]
        twice = sorted({v for v in seen if seen.count(v) > 1})
        if twice:
            raise TableError(f"{path}: {field} {', '.join(twice)} on more than one row")
    return rows


def check_row(row, where):
    if not isinstance(row["env"], str) or not re.fullmatch(r"NBR_[A-Z0-9_]+", row["env"]):
        raise TableError(f"{where}: the environment name must be NBR_...")
    if row["key"] is not None and not re.fullmatch(r"nbr_[a-z0-9_]+", row["key"]):
        raise TableError(f"{where}: {row['env']}: the info key must be nbr_... or NULL")
    if not isinstance(row["doc"], str) or not row["doc"] or "\n" in row["doc"] \
            or "|" in row["doc"]:
        raise TableError(f"{where}: {row['env']}: doc must be one line without '|'")
    if "/*" in row["doc"] or "*/" in row["doc"]:
        raise TableError(f"{where}: {row['env']}: doc goes into a C comment: no /* or */")
    if row["type"] == "int" and not (isinstance(row["default"], int) and
                                     isinstance(row["min"], int) and
                                     isinstance(row["max"], int) and row["min"] <= row["max"]):
        raise TableError(f"{where}: {row['env']}: default, min and max must be integers")
    if row["type"] == "bool" and row["default"] not in (0, 1):
        raise TableError(f"{where}: {row['env']}: a switch's default is 0 or 1")
    if row["type"] == "enum" and row["default"] not in row["words"].split("|"):
        raise TableError(f"{where}: {row['env']}: the default is not one of {row['words']}")


def value_text(row):
    """What the setting takes, and its default, in Markdown."""
    t = row["type"]
    if t == "int":
        lo, hi, d = row["min"], row["max"], row["default"]
        values = f"integer ≥ {lo}" if hi == INT_MAX else f"integer {lo}–{hi}"
        default = "unset" if not lo <= d <= hi else str(d)
    elif t == "bool":
        values = "`1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`"
        default = f"`{row['default']}`"
    elif t == "enum":
        values = ", ".join(f"`{w}`" for w in row["words"].split("|"))
        default = f"`{row['default']}`"
    else:
        values = row["what"]
        default = f"`{row['default']}`" if row["default"] else "unset"
    return f"{values}; default {default}"


def readme_lines(rows):
    out = ["| MPI_Info key | environment | value | meaning |", "| --- | --- | --- | --- |"]
    for r in rows:
        key = f"`{r['key']}`" if r["key"] else ""
        out.append(f"| {key} | `{r['env']}` | {value_text(r)} | {r['doc']} |")
    return out


def plain(text):
    return text.replace("`", "").replace("≥", ">=").replace("–", "..")


def header_entry(r):
    head = f" *   {r['key']} / {r['env']}" if r["key"] else f" *   {r['env']}"
    body = textwrap.wrap(f"{plain(value_text(r))}: {plain(r['doc'])}", width=70,
                         break_on_hyphens=False)
    return [head] + [f" *       {line}".rstrip() for line in body]


def header_lines(rows):
    out = []
    for r in rows:
        out.extend(header_entry(r))
    return out


def readme_row_env(line):
    m = re.match(r"\|[^|]*\|\s*`(NBR_[A-Z0-9_]+)`", line)
    return m.group(1) if m else None


def header_row_env(line):
    m = re.match(r" \*   (?:nbr_[a-z0-9_]+ / )?(NBR_[A-Z0-9_]+)\s*$", line)
    return m.group(1) if m else None


def split_block(path, lines):
    """(before, block, after) around the markers, or a TableError."""
    begins = [i for i, l in enumerate(lines) if BEGIN in l]
    ends = [i for i, l in enumerate(lines) if END in l]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise TableError(f"{path}: needs one {BEGIN} line and one {END} line after it "
                         f"(found {len(begins)} and {len(ends)})")
    b, e = begins[0], ends[0]
    return lines[:b + 1], lines[b + 1:e], lines[e:]


def entries(block, env_of):
    """env -> its lines, in order; lines before the first entry under None."""
    found, order, current = {}, [], None
    for line in block:
        env = env_of(line)
        if env:
            current = env
            order.append(env)
            found.setdefault(env, [])
        found.setdefault(current, []).append(line)
    return found, order


def differences(path, block, expected, env_of, rows):
    """One message per setting the block disagrees with the table on."""
    if block == expected:
        return []
    have, have_order = entries(block, env_of)
    want, want_order = entries(expected, env_of)
    named = {r["env"]: (f"{r['key']} / {r['env']}" if r["key"] else r["env"]) for r in rows}
    problems = []
    for env in want_order:
        if env not in have:
            problems.append(f"{path}: {named[env]} is missing (in the table, not in the file)")
        elif have[env] != want[env] or have_order.count(env) > 1:
            problems.append(f"{path}: {named[env]} differs from the table:\n"
                            + "\n".join(f"    table: {l}" for l in want[env]) + "\n"
                            + "\n".join(f"    file:  {l}" for l in have[env]))
    for env in have_order:
        if env not in want:
            problems.append(f"{path}: {env} is in the file but not in the table")
    if not problems and have.get(None) != want.get(None):
        problems.append(f"{path}: the lines before the first setting differ from the "
                        f"generated ones (the table's heading)")
    if not problems and have_order != want_order:
        problems.append(f"{path}: the settings are not in the table's order")
    if not problems:
        problems.append(f"{path}: the block differs from the generated one")
    return problems


TARGETS = {
    "readme": (readme_lines, readme_row_env),
    "header": (header_lines, header_row_env),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--print", choices=sorted(TARGETS), help="print a generated block")
    mode.add_argument("--write", action="store_true", help="rewrite the blocks in place")
    mode.add_argument("--check", action="store_true", help="fail where a file disagrees")
    mode.add_argument("--env-names", action="store_true", help="list environment names")
    ap.add_argument("--table", default=os.path.join(ROOT, "src/base/settings_table.def"))
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--header", default=os.path.join(ROOT, "include/nbrcoll.h"))
    ap.add_argument("--only", choices=sorted(TARGETS), help="one file for --write/--check")
    args = ap.parse_args()
    try:
        rows = read_table(args.table)
        if args.env_names:
            print("\n".join(r["env"] for r in rows))
            return 0
        if args.print:
            print("\n".join(TARGETS[args.print][0](rows)))
            return 0
        problems = []
        for name in ([args.only] if args.only else sorted(TARGETS)):
            generate, env_of = TARGETS[name]
            path = args.readme if name == "readme" else args.header
            try:
                lines = open(path, encoding="utf-8").read().split("\n")
                before, block, after = split_block(path, lines)
            except (OSError, TableError) as e:
                problems.append(str(e))
                continue
            expected = generate(rows)
            if args.write:
                if block != expected:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write("\n".join(before + expected + after))
                    print(f"settings-doc: wrote {path}")
            else:
                problems.extend(differences(path, block, expected, env_of, rows))
        if problems:
            for p in problems:
                print(f"settings-doc: {p}", file=sys.stderr)
            if args.check:
                print("settings-doc: the table is src/base/settings_table.def; after "
                      "editing it run scripts/settings-doc.py --write", file=sys.stderr)
            return 1
        return 0
    except (OSError, TableError) as e:
        print(f"settings-doc: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
