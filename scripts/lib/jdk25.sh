# Sourced by scripts/test and scripts/check-first-use: where a JDK 25 is, for the checks that run
# on the current LTS beside Java 17. $EFA_AH_JDK25 (a JAVA_HOME) wins; otherwise the first JDK under
# /usr/lib/jvm whose release file says 25 (Debian's and Temurin's packages install there).
# Prints its JAVA_HOME, or nothing.
jdk25_home() {
  local dir
  if [ -n "${EFA_AH_JDK25:-}" ]; then
    [ -x "$EFA_AH_JDK25/bin/java" ] && echo "$EFA_AH_JDK25"
    return 0
  fi
  for dir in /usr/lib/jvm/*/; do
    if [ -x "$dir/bin/java" ] && grep -qs '^JAVA_VERSION="25' "$dir/release"; then
      echo "${dir%/}"
      return 0
    fi
  done
}
