# Sourced by install-deps.sh and chroot.sh: where this machine's apt gets Debian from.
#
#   unimem_debian_archive [SUITE]   prints the URI of the Debian archive, default SUITE bookworm
#
# Policy: no package registry's or mirror's host name is written into the repository. The
# archive is the one this machine's apt already uses: the first enabled `deb` entry that serves
# SUITE (exactly: not SUITE-security or SUITE-updates) with the component main, read from
# apt's own source lists (Dir::Etc::sourcelist, one-line format, and Dir::Etc::sourceparts:
# *.list one-line files and *.sources deb822 files). UNIMEM_DEBIAN_MIRROR overrides it. Fails,
# saying so, when there is no such entry.

unimem_debian_archive() {
  local suite=${1:-bookworm}
  if [ -n "${UNIMEM_DEBIAN_MIRROR:-}" ]; then
    echo "$UNIMEM_DEBIAN_MIRROR"
    return 0
  fi
  local list=/etc/apt/sources.list parts=/etc/apt/sources.list.d/ L P
  if command -v apt-config >/dev/null &&
     eval "$(apt-config shell L Dir::Etc::sourcelist/f P Dir::Etc::sourceparts/d 2>/dev/null)"; then
    list=${L:-$list}
    parts=${P:-$parts}
  fi
  local -a one_line=() deb822=()
  [ -f "$list" ] && one_line+=("$list")
  local f
  for f in "${parts%/}"/*.list; do [ -f "$f" ] && one_line+=("$f"); done
  for f in "${parts%/}"/*.sources; do [ -f "$f" ] && deb822+=("$f"); done
  local uri=""
  if [ ${#one_line[@]} -gt 0 ]; then
    # deb [option=value ...] URI SUITE COMPONENT...
    uri=$(awk -v suite="$suite" '
      { sub(/#.*/, "") }
      $1 != "deb" { next }
      {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if (i + 2 > NF || $(i + 1) != suite) next
        for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit }
      }' "${one_line[@]}")
  fi
  if [ -z "$uri" ] && [ ${#deb822[@]} -gt 0 ]; then
    # Stanzas of "Field: value" lines (continued on indented lines), blank lines between them.
    uri=$(awk -v suite="$suite" '
      function has(list, word,   n, a, k) {
        n = split(list, a, " ")
        for (k = 1; k <= n; k++) if (a[k] == word) return 1
        return 0
      }
      function stanza_end() {
        if (has(f["types"], "deb") && has(f["suites"], suite) && has(f["components"], "main") &&
            tolower(f["enabled"]) !~ /^(no|false|0)$/ && f["uris"] != "") {
          split(f["uris"], u, " "); print u[1]; found = 1; exit
        }
        delete f; key = ""
      }
      FNR == 1 && NR > 1 { stanza_end() }
      /^#/ { next }
      /^[ \t]*$/ { stanza_end(); next }
      /^[ \t]/ { if (key != "") f[key] = f[key] " " $0; next }
      {
        key = tolower(substr($0, 1, index($0, ":") - 1))
        f[key] = substr($0, index($0, ":") + 1)
        gsub(/^[ \t]+|[ \t]+$/, "", f[key])
      }
      END { if (!found) stanza_end() }' "${deb822[@]}")
  fi
  if [ -z "$uri" ]; then
    echo "unimem: no Debian archive found in this machine's apt configuration: no enabled 'deb'" \
         "entry for the suite $suite with the component main in $list or ${parts%/}/*.list," \
         "*.sources; set UNIMEM_DEBIAN_MIRROR to the archive's URI" >&2
    return 1
  fi
  echo "${uri%/}"
}
