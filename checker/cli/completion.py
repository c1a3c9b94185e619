"""`regcheck completion bash|zsh`: a shell completion script, generated from the argparse parser.

    eval "$(regcheck completion bash)"      # in ~/.bashrc
    eval "$(regcheck completion zsh)"       # in ~/.zshrc (uses zsh's bashcompinit)

The script completes subcommand names, each subcommand's options, the values of options with a
fixed set of choices (--format, --kind, ...), and file names everywhere else.
"""

from __future__ import annotations

import shlex

from .common import EXIT_OK

SHELLS = ("bash", "zsh")


def register(sub) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash or zsh)",
                       description="Print a completion script for the shell; load it with "
                                   "eval \"$(regcheck completion bash)\" (or zsh) in the shell's startup file.")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(run=run)


def run(args, out) -> int:
    out.stdout.write(completion_script(args.root_parser, args.shell))
    return EXIT_OK


def option_strings(parser) -> list[str]:
    return [s for a in parser.arguments for s in a.option_strings]


def choice_options(parser) -> dict[str, list[str]]:
    """Option string -> its choices, for options that take one of a fixed set."""
    return {s: [str(c) for c in a.choices] for a in parser.arguments if a.option_strings and a.choices
            for s in a.option_strings}


def positional_choices(parser) -> list[str]:
    return [str(c) for a in parser.arguments if not a.option_strings and a.choices for c in a.choices]


def _words(items) -> str:
    return shlex.quote(" ".join(items))


def bash_script(root) -> str:
    commands = list(root.commands)
    lines = [
        "# regcheck completion for bash, generated from its argument parser (regcheck completion bash)",
        "_regcheck() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "${COMP_WORDS[i]}" in -*) ;; *) cmd="${COMP_WORDS[i]}"; break ;; esac',
        "    done",
        '    if [[ -z "$cmd" ]]; then',
        f'        COMPREPLY=($(compgen -W {_words(commands + option_strings(root))} -- "$cur"))',
        "        return",
        "    fi",
        '    local opts="" values=""',
        '    case "$cmd" in',
    ]
    for name, parser in root.commands.items():
        lines.append(f"        {name})")
        lines.append(f"            opts={_words(option_strings(parser))}")
        choices = choice_options(parser)
        if choices:
            lines.append('            case "$prev" in')
            for opt, values in choices.items():
                lines.append(f"                {opt}) values={_words(values)} ;;")
            lines.append("            esac")
        positional = positional_choices(parser)
        if positional:
            lines.append(f'            [[ -z "$values" && "$cur" != -* ]] && values={_words(positional)}')
        lines.append("            ;;")
    lines += [
        "    esac",
        '    if [[ -n "$values" ]]; then',
        '        COMPREPLY=($(compgen -W "$values" -- "$cur"))',
        '    elif [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$opts" -- "$cur"))',
        "    else",
        '        COMPREPLY=($(compgen -f -- "$cur"))',
        "    fi",
        "}",
        "complete -o default -F _regcheck regcheck",
        "",
    ]
    return "\n".join(lines)


def zsh_script(root) -> str:
    return ("# regcheck completion for zsh (regcheck completion zsh): the bash completion, through bashcompinit\n"
            "autoload -U +X compinit && compinit\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + bash_script(root))


def completion_script(root, shell: str) -> str:
    return bash_script(root) if shell == "bash" else zsh_script(root)
