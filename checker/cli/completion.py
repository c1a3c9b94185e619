"""`regcheck completion bash|zsh`: a shell completion script, generated from the argparse parser.

    eval "$(regcheck completion bash)"      # in ~/.bashrc
    eval "$(regcheck completion zsh)"       # in ~/.zshrc (after compinit, or it loads compinit)

The script completes subcommand names, each subcommand's options, the values of options with a
fixed set of choices (--format, --kind, ...), and file names everywhere else (in bash, as the shell
completes them: a name with spaces is one name, a directory ends in /). The zsh script is
zsh's own `_arguments` completion, so options are listed with their whole help text (colons,
brackets and quotes shown as they are) and commands with the first clause of theirs.
"""

from __future__ import annotations

import argparse
import re
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
        # File names, one per element whatever they contain (a space, a *); -o filenames has readline
        # quote them and end a directory with / (compopt is bash 4's; mapfile too, hence the loop).
        "        type compopt &>/dev/null && compopt -o filenames",
        "        COMPREPLY=()",
        '        while IFS= read -r i; do COMPREPLY+=("$i"); done < <(compgen -f -- "$cur")',
        "    fi",
        "}",
        "complete -o default -F _regcheck regcheck",
        "",
    ]
    return "\n".join(lines)


def _zsh_text(text: str | None, width: int = 60) -> str:
    """The first clause of a help text, as it may stand in a single-quoted `_describe` entry (a
    command's; no quotes, brackets, colons or expansions), cut at a word."""
    first = re.split(r"(?<!e\.g)\. |; |: | \(| - ", " ".join((text or "").split()), maxsplit=1)[0].rstrip(".")
    if len(first) > width:
        first = first[:width].rsplit(" ", 1)[0] + "..."
    return re.sub(r"[\\'\[\]:$`\"]", "", first)


def _zsh_explanation(text: str | None) -> str:
    """A whole help text as the `[explanation]` of an `_arguments` spec inside single quotes: zsh ends
    the explanation at an unescaped `]`, takes `[` and `\\` as escapes (so each is escaped with a
    backslash), and shows `:`, `$`, `%` and backquotes as they are; a single quote closes and reopens
    the shell's quoting. The description is whole: zsh cuts a long one to the terminal's width itself."""
    if text is None or text == argparse.SUPPRESS:
        return ""
    escaped = re.sub(r"([\\\[\]])", r"\\\1", " ".join(text.split()))
    return escaped.replace("'", "'\\''")


def _zsh_action(action) -> str:
    """The `:message:action` tail of an option or positional: its choices, else file names."""
    name = (action.metavar or action.dest or "value").lower().replace(":", "")
    if action.choices:
        return f":{name}:({' '.join(shlex.quote(str(c)) for c in action.choices)})"
    if action.type not in (None, str) or name in ("address", "key=value", "rule-id", "key"):
        return f":{name}: "  # a number, an address or a name: nothing to offer
    return f":{name}:_files"


def _zsh_option_specs(parser) -> list[str]:
    specs = []
    for a in parser.arguments:
        if not a.option_strings:
            continue
        takes_value = a.nargs != 0
        repeated = "*" if type(a).__name__ in ("_AppendAction", "_CountAction") else ""
        names = a.option_strings
        head = (f"'({' '.join(names)})'{{{','.join(names)}}}" if len(names) > 1 and not repeated
                else f"'{repeated}'{{{','.join(names)}}}" if len(names) > 1 else f"'{repeated}{names[0]}")
        body = f"[{_zsh_explanation(a.help)}]" + (_zsh_action(a) if takes_value else "")
        specs.append(f"{head}'{body}'" if head.endswith("}") else f"{head}{body}'")
    return specs


def _zsh_positional_specs(parser) -> list[str]:
    out = []
    for position, a in enumerate((a for a in parser.arguments if not a.option_strings), start=1):
        many = a.nargs in ("*", "+", "...") or a.nargs == "A..."
        out.append(f"'{'*' if many else position}{_zsh_action(a)}'")
    return out


def zsh_script(root) -> str:
    lines = ["#compdef regcheck",
             "# regcheck completion for zsh, generated from its argument parser (regcheck completion zsh)",
             "_regcheck() {",
             '    local curcontext="$curcontext" state line',
             "    typeset -A opt_args",
             "    _arguments -C \\"]
    lines += [f"        {spec} \\" for spec in _zsh_option_specs(root)]
    lines += ["        '1:command:->command' \\", "        '*::argument:->argument'",
              "    case $state in", "        command)", "            local -a commands",
              "            commands=("]
    lines += [f"                '{name}:{_zsh_text(p.description)}'" for name, p in root.commands.items()]
    lines += ["            )", "            _describe -t commands 'regcheck command' commands ;;",
              "        argument)", '            curcontext="${curcontext%:*:*}:regcheck-$line[1]:"',
              "            case $line[1] in"]
    for name, parser in root.commands.items():
        specs = _zsh_option_specs(parser) + _zsh_positional_specs(parser)
        lines.append(f"                {name})")
        lines.append("                    _arguments \\")
        lines += [f"                        {spec} \\" for spec in specs[:-1]]
        lines.append(f"                        {specs[-1]} ;;" if specs else "                        ;;")
    lines += ["            esac ;;", "    esac", "}", "",
              "# Loaded by eval from ~/.zshrc, not from $fpath: register the function ourselves.",
              "(( $+functions[compdef] )) || { autoload -U compinit && compinit }",
              "compdef _regcheck regcheck", ""]
    return "\n".join(lines)


def completion_script(root, shell: str) -> str:
    return bash_script(root) if shell == "bash" else zsh_script(root)
