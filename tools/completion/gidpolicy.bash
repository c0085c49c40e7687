# bash completion for gidpolicy(1).
#
# Every word offered comes from the binary being completed, never from a list kept here: the
# subcommands, each subcommand's options and the values an option takes are asked of
# `gidpolicy --complete ...` (tools/gidpolicy/complete.hpp), profile specs are the policy
# registry's names, and device names are this host's (/sys/class/infiniband). After
# `fake-host ... --` the words are a command and its arguments.

_gidpolicy() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion -n =: || return
  else
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi
  local prog=${words[0]} sub="" i
  # The subcommand: the first word after the program that is not an option.
  for ((i = 1; i < cword; i++)); do
    if [[ ${words[i]} != -* ]]; then
      sub=${words[i]}
      break
    fi
  done
  if [[ -z $sub ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "$("$prog" --complete options 2>/dev/null | cut -d' ' -f1)" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$("$prog" --complete subcommands 2>/dev/null)" -- "$cur"))
    fi
    return
  fi
  # fake-host runs a command after `--`: complete that command as bash would.
  if [[ $sub == fake-host ]]; then
    for ((i = 1; i < cword; i++)); do
      if [[ ${words[i]} == -- ]]; then
        if ((i + 1 == cword)); then
          COMPREPLY=($(compgen -c -- "$cur"))
        else
          COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
      fi
    done
  fi
  local options
  options=$("$prog" --complete options "$sub" 2>/dev/null) || return
  # The value of the option before the cursor, when it takes one; for a list (env --for
  # nccl,ucx), the item after the last comma, the ones before it kept.
  if [[ $prev == --* ]] && grep -qx -e "$prev value" -e "$prev list" <<<"$options"; then
    local values head="" item=$cur
    values=$("$prog" --complete values "$sub" "$prev" 2>/dev/null) || return
    if grep -qx -- "$prev list" <<<"$options" && [[ $cur == *,* ]]; then
      head=${cur%,*},
      item=${cur##*,}
    fi
    case $values in
      :file) COMPREPLY=($(compgen -f -- "$cur")) ;;
      :device) COMPREPLY=($(compgen -P "$head" -W "$(ls /sys/class/infiniband 2>/dev/null)" -- "$item")) ;;
      :none) COMPREPLY=() ;;
      *) COMPREPLY=($(compgen -P "$head" -W "$values" -- "$item")) ;;
    esac
    return
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(cut -d' ' -f1 <<<"$options")" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _gidpolicy gidpolicy
