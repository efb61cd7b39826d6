#!/bin/sh
# A promptfoo exec: provider: the prompt is $1; stdout (trimmed, ANSI
# escapes removed) is the output.
printf '  \033[32m%s\033[0m  \n' "reply to: $1"
