#!/usr/bin/env bash
# Builds unimem's API reference with Doxygen (docs/Doxyfile) into build/docs/html and fails on
# any warning: every public class, function, enum, member, typedef and macro of
# include/unimem/*.hpp must be documented, and every public header needs a `/// @file` comment
# (Doxygen checks the macros of documented files only). test.sh runs it as the entry `docs`.
#
#   bash scripts/docs.sh          then open build/docs/html/index.html
#
# Needs doxygen 1.9.2 or later (WARN_AS_ERROR = FAIL_ON_WARNINGS); scripts/install-deps.sh
# installs Debian 12's (1.9.4). The last line says the number of warnings and where the HTML is.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

if ! command -v doxygen >/dev/null; then
  echo "docs.sh: FAILED: doxygen not found (Debian: apt-get install doxygen, or run scripts/install-deps.sh as root)" >&2
  exit 1
fi
version=$(doxygen --version | awk '{print $1}')
if [ "$(printf '%s\n' 1.9.2 "$version" | sort -V | head -1)" != 1.9.2 ]; then
  echo "docs.sh: FAILED: doxygen $version cannot fail on warnings (FAIL_ON_WARNINGS needs 1.9.2)" >&2
  exit 1
fi

no_file_comment=()
for h in include/unimem/*.hpp include/unimem/{core,placement,pool,interop,mpi,diagnostics}/*.hpp; do
  grep -q '^/// @file' "$h" || no_file_comment+=("$h")
done
for h in "${no_file_comment[@]}"; do
  echo "$h:1: warning: public header without a '/// @file' comment: its macros go unchecked"
done

out=build/docs
rm -rf "$out/html" "$out/xml"
mkdir -p "$out"
log=$out/doxygen.log
UNIMEM_DOCS_VERSION=$(sed -n 's/^#define UNIMEM_VERSION_STRING "\(.*\)"$/\1/p' include/unimem/core/version.hpp) \
  doxygen docs/Doxyfile >"$log" 2>&1
rc=$?

# Doxygen 1.9.4 does not warn about undocumented enumerators: find them in its XML output (an
# enumvalue with neither a brief nor a detailed description; each enum appears in several files).
if [ -d "$out/xml" ]; then
  awk '
    /<memberdef kind="enum"/ { in_enum = 1; enum_name = ""; undocumented = ""; next }
    in_enum && /<qualifiedname>/ {
      enum_name = $0; sub(/.*<qualifiedname>/, "", enum_name); sub(/<\/qualifiedname>.*/, "", enum_name)
    }
    in_enum && /<enumvalue / { in_value = 1; documented = 0; value = ""; next }
    in_value && /<name>/ && value == "" { value = $0; sub(/.*<name>/, "", value); sub(/<\/name>.*/, "", value) }
    in_value && /<para>/ { documented = 1 }
    in_value && /<\/enumvalue>/ { if (!documented) undocumented = undocumented " " value; in_value = 0 }
    in_enum && /<location / && undocumented != "" {
      file = "?"; line = "?"
      if (match($0, / file="[^"]*"/)) file = substr($0, RSTART + 7, RLENGTH - 8)
      if (match($0, / line="[^"]*"/)) line = substr($0, RSTART + 7, RLENGTH - 8)
      n = split(undocumented, values, " ")
      for (i = 1; i <= n; ++i) {
        printf "include/%s:%s: warning: enumerator %s::%s is not documented\n", file, line, enum_name, values[i]
      }
    }
    /<\/memberdef>/ { in_enum = 0 }
  ' "$out"/xml/*.xml | sort -u >>"$log"
fi
cat "$log"
# Doxygen reports some warnings twice (once per scope that lists the entity): count them once.
warnings=$(( $(grep -E ': (warning|error):' "$log" | sort -u | wc -l) + ${#no_file_comment[@]} ))

if [ $rc -ne 0 ] || [ "$warnings" -ne 0 ]; then
  echo "docs.sh: FAILED: $warnings warnings (doxygen $version exited $rc); the API reference must build without any"
  exit 1
fi
echo "docs.sh: 0 warnings (doxygen $version); the API reference is in $root/$out/html/index.html"
