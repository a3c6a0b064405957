//! Splitting a command string into argv the way a POSIX shell would split words, and nothing
//! more: quotes and backslashes are honoured, but there is no expansion of any kind, and the
//! syntax that only a shell could act on is refused instead of being passed on as text.
//!
//! - `'…'` is literal; `"…"` is literal except that `\` escapes `$`, `` ` ``, `"` and `\`;
//!   outside quotes `\x` is `x`.
//! - Refused anywhere, quoted or not: `$(`, `${`, backticks (command and parameter
//!   substitution), newlines, carriage returns and NUL.
//! - Refused outside quotes: `|`, `&`, `;`, `<`, `>`, `(`, `)` (pipes, lists, redirections,
//!   subshells). Inside quotes they are ordinary characters (`grep 'a|b'` is fine).
//! - `$HOME`, `*`, `~` and `#` are passed through as the literal text.

use crate::error::{Error, Result};
use crate::limits::MAX_COMMAND_BYTES;

const NO_SHELL: &str =
    "no shell is used: run one program with its arguments, without pipes, redirections, command lists or substitutions";

/// Splits `command` into words. Refusals are `ARGUMENT_REJECTED` with the character position
/// and what to do instead; an unterminated quote is `ARGUMENT_REJECTED` too.
pub fn split_command(command: &str) -> Result<Vec<String>> {
    if command.len() > MAX_COMMAND_BYTES {
        return Err(Error::InvalidInput(format!(
            "the command is {} bytes long; the limit is {MAX_COMMAND_BYTES} bytes. Put long data in a file (or on stdin) and name the file",
            command.len()
        )));
    }
    refuse_anywhere(command)?;
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether a word has started: `''` is an empty word, plain whitespace is not.
    let mut in_word = false;
    let mut chars = command.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, inner)) => word.push(inner),
                        None => return Err(unterminated('\'', at)),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.peek() {
                            Some(&(_, escaped @ ('$' | '`' | '"' | '\\'))) => {
                                word.push(escaped);
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        Some((_, inner)) => word.push(inner),
                        None => return Err(unterminated('"', at)),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some((_, escaped)) => word.push(escaped),
                    None => {
                        return Err(Error::ArgumentRejected(format!(
                            "the command ends with a backslash (position {at}); remove it or quote it as '\\\\'"
                        )))
                    }
                }
            }
            '|' | '&' | ';' | '<' | '>' | '(' | ')' => {
                return Err(Error::ArgumentRejected(format!(
                    "'{c}' at position {at} is shell syntax ({}); {NO_SHELL}. Quote it if it is meant literally",
                    operator_name(c)
                )));
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Refuses what a shell would act on even inside double quotes, and what no argument can hold.
fn refuse_anywhere(command: &str) -> Result<()> {
    let found = [
        ("$(", "command substitution"),
        ("${", "parameter expansion"),
        ("`", "command substitution"),
        ("\n", "a newline (a second command)"),
        ("\r", "a carriage return"),
        ("\0", "a NUL byte"),
    ]
    .into_iter()
    .filter_map(|(needle, what)| command.find(needle).map(|at| (at, needle, what)))
    .min_by_key(|(at, _, _)| *at);
    match found {
        Some((at, needle, what)) => Err(Error::ArgumentRejected(format!(
            "the command contains {what} ('{}') at position {at}; {NO_SHELL}",
            needle.escape_debug()
        ))),
        None => Ok(()),
    }
}

fn operator_name(c: char) -> &'static str {
    match c {
        '|' => "a pipe",
        '&' => "background or '&&' list",
        ';' => "a command list",
        '<' | '>' => "a redirection",
        _ => "a subshell",
    }
}

fn unterminated(quote: char, at: usize) -> Error {
    Error::ArgumentRejected(format!(
        "the {quote} quote opened at position {at} is never closed; close it"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Vec<String> {
        split_command(command).unwrap_or_else(|err| panic!("{command}: {err}"))
    }

    fn rejected(command: &str) -> String {
        let err = split_command(command).expect_err(command);
        assert_eq!(err.code(), "ARGUMENT_REJECTED", "{command}");
        err.to_string()
    }

    #[test]
    fn words_are_split_on_blanks_with_posix_quoting() {
        assert_eq!(
            words("git push origin main"),
            ["git", "push", "origin", "main"]
        );
        assert_eq!(words("  ls\t-la  "), ["ls", "-la"]);
        assert_eq!(
            words("echo 'a b' \"c d\" e\\ f"),
            ["echo", "a b", "c d", "e f"]
        );
        assert_eq!(words("echo '' \"\""), ["echo", "", ""]);
        assert_eq!(words("echo a'b'\"c\"d"), ["echo", "abcd"]);
        assert_eq!(
            words(r#"echo "a \"q\" \\ \$x \n""#),
            ["echo", r#"a "q" \ $x \n"#]
        );
        assert_eq!(words(r"echo 'back\slash'"), ["echo", r"back\slash"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn nothing_is_expanded() {
        assert_eq!(
            words("echo $HOME ~ *.rs #x"),
            ["echo", "$HOME", "~", "*.rs", "#x"]
        );
    }

    #[test]
    fn quoted_operators_are_plain_text() {
        assert_eq!(
            words("grep 'a|b;c&d' \"x > y\""),
            ["grep", "a|b;c&d", "x > y"]
        );
        assert_eq!(
            words(r"find . \( -name x \)"),
            ["find", ".", "(", "-name", "x", ")"]
        );
    }

    #[test]
    fn shell_syntax_is_refused_with_a_message_that_says_no_shell_is_used() {
        for command in [
            "ls | wc",
            "ls > out",
            "cat < in",
            "a; b",
            "a && b",
            "a || b",
            "sleep 1 &",
            "ls 2>&1",
            "(cd x)",
            "echo $(id)",
            "echo `id`",
            "echo ${HOME}",
            "echo \"$(id)\"",
            "echo 'x${y}'",
            "a\nb",
            "a\r",
            "a\0b",
        ] {
            let message = rejected(command);
            assert!(message.contains("no shell is used"), "{command}: {message}");
        }
    }

    #[test]
    fn unterminated_quotes_and_trailing_backslashes_are_refused() {
        assert!(rejected("echo 'abc").contains("never closed"));
        assert!(rejected("echo \"abc").contains("never closed"));
        assert!(rejected("echo abc\\").contains("backslash"));
    }
}
