# bash completion for phoenix and phoenix-loop.
# Installed as /usr/share/bash-completion/completions/{phoenix,phoenix-loop};
# from a checkout: source completions/phoenix.bash
#
# phoenix asks the binary itself (`phoenix __complete WORD...`), so commands,
# flags and the check ids of the repository's phoenix.json are always the
# ones this phoenix knows. phoenix-loop's flags are read from its --help.

_phoenix() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local IFS=$'\n'
  local bin="${COMP_WORDS[0]}"
  command -v "$bin" >/dev/null 2>&1 || bin=phoenix
  COMPREPLY=($("$bin" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
  # No candidate for a value (a directory, a file): let bash complete paths.
  if [ ${#COMPREPLY[@]} -eq 0 ]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}

_phoenix_loop() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local prev="${COMP_WORDS[COMP_CWORD-1]}"
  local IFS=$'\n'
  case "$prev" in
    --tasks|--prompt|-C|--directory)
      COMPREPLY=($(compgen -f -- "$cur"))
      return ;;
    --max-iterations|--until|--branch|--workers|--shard|--max-cost|--max-hours)
      COMPREPLY=()
      return ;;
    --remote|--merge)
      COMPREPLY=($(compgen -W "$(git remote 2>/dev/null)" -- "$cur"))
      return ;;
  esac
  local bin="${COMP_WORDS[0]}"
  command -v "$bin" >/dev/null 2>&1 || bin=phoenix-loop
  local flags
  flags=$("$bin" --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u)
  COMPREPLY=($(compgen -W "$flags" -- "$cur"))
}

complete -F _phoenix phoenix
complete -F _phoenix_loop phoenix-loop
