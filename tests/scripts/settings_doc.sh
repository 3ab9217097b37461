#!/usr/bin/env bash
# The settings check (scripts/settings-doc.py --check) on copies: files
# written from the table pass, and each planted mismatch fails with the
# setting named: a missing row, a changed default, a changed header entry,
# a row the table lacks, a README without markers.
# usage: settings_doc.sh PYTHON SOURCE_DIR
set -u
python=$1 source=$2
doc=$source/scripts/settings-doc.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fresh() {
  printf '# x\n\n<!-- settings:begin -->\n<!-- settings:end -->\n\nafter\n' >"$work/README.md"
  printf '/*\n * <!-- settings:begin -->\n * <!-- settings:end -->\n */\n' >"$work/h.h"
  cp "$source/src/base/settings_table.def" "$work/table.def"
  "$python" "$doc" --write --table "$work/table.def" --readme "$work/README.md" \
    --header "$work/h.h" >/dev/null || { echo "settings_doc: --write failed" >&2; exit 1; }
}

check() {
  "$python" "$doc" --check --table "$work/table.def" --readme "$work/README.md" \
    --header "$work/h.h" 2>&1
}

# expect_fail WHAT NAME: the check fails and its message names NAME
expect_fail() {
  local out
  if out=$(check); then
    echo "settings_doc: planted $1 was not caught" >&2
    exit 1
  fi
  grep -q -- "$2" <<<"$out" || { echo "settings_doc: $1: the message does not name $2: $out" >&2; exit 1; }
}

fresh
out=$(check) || { echo "settings_doc: freshly written files fail: $out" >&2; exit 1; }
grep -q '^after$' "$work/README.md" || { echo "settings_doc: --write lost the text after the block" >&2; exit 1; }

sed -i '/NBR_AGREE_ERRORS/d' "$work/README.md"
expect_fail "README row removed" "nbr_agree_errors / NBR_AGREE_ERRORS is missing"

fresh
sed -i 's/"NBR_COMBINING_THETA", 2,/"NBR_COMBINING_THETA", 3,/' "$work/table.def"
expect_fail "default changed in the table" "nbr_combining_theta / NBR_COMBINING_THETA differs"

fresh
sed -i 's/bytes per chunk of staged/bytes per chunk of stage/' "$work/h.h"
expect_fail "header entry edited" "nbr_staging_chunk / NBR_STAGING_CHUNK differs"

fresh
sed -i 's/^<!-- settings:end -->$/| | `NBR_NOT_A_SETTING` | x | y |\n&/' "$work/README.md"
expect_fail "README row the table lacks" "NBR_NOT_A_SETTING is in the file but not in the table"

fresh
sed -i '/settings:begin/d' "$work/README.md"
expect_fail "README without markers" "needs one <!-- settings:begin --> line"
echo "settings_doc: every planted mismatch was caught"
