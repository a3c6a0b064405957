//! Git's config file syntax, as git itself reads it: sections and subsections, trailing
//! comments, quotes, escapes and line continuations. A reading that differs from git's would
//! protect a path git does not use and leave the one it does writable.

/// One variable of a git config file, as git reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ConfigEntry {
    /// Lower case.
    pub(super) section: String,
    /// As written in `[section "sub"]`; lower case in the old `[section.sub]`.
    pub(super) subsection: Option<String>,
    /// Lower case.
    pub(super) key: String,
    /// `None` for a key without `=` (a boolean true).
    pub(super) value: Option<String>,
}

impl ConfigEntry {
    /// `section.subsection.key`, as `git config --list` names it.
    pub(super) fn name(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }
}

/// The variables of a git config file, read as git reads them
/// (<https://git-scm.com/docs/git-config#_syntax>): comments after `#` or `;` (also after a
/// value, outside double quotes), section headers `[section]`, `[section "subsection"]` (with
/// `\"` and `\\`) and `[section.subsection]`, with a variable allowed on the header's line,
/// case-insensitive section and key names, values with whitespace trimmed (inside kept as
/// written, as git 2.45 and later do; older versions made each a space),
/// double quotes removed, the escapes `\"`, `\\`, `\n`, `\t`, `\b` and a backslash at the end of
/// a line continuing it. A line git refuses is skipped (git refuses the whole file, and then
/// runs nothing).
pub(super) fn config_entries(text: &str) -> Vec<ConfigEntry> {
    let mut input = ConfigInput::new(text.strip_prefix('\u{feff}').unwrap_or(text));
    let mut entries = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    let mut comment = false;
    while let Some(c) = input.next() {
        match c {
            '\n' => comment = false,
            _ if comment || git_space(c) => {}
            '#' | ';' => comment = true,
            '[' => {
                section = input.section_header();
                if section.is_none() {
                    input.skip_line();
                }
            }
            _ if c.is_ascii_alphabetic() => match (input.variable(c), &section) {
                (Some((key, value)), Some((name, subsection))) => entries.push(ConfigEntry {
                    section: name.clone(),
                    subsection: subsection.clone(),
                    key,
                    value,
                }),
                (Some(_), None) => {} // a variable before any section: git refuses it
                (None, _) => input.skip_line(),
            },
            _ => input.skip_line(),
        }
    }
    entries
}

/// git's `isspace`: space, tab, newline and carriage return only.
fn git_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// git's `iskeychar`.
fn key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// A git config file read one character at a time, `\r\n` as `\n`.
struct ConfigInput<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    last: Option<char>,
}

impl<'a> ConfigInput<'a> {
    fn new(text: &'a str) -> Self {
        ConfigInput {
            chars: text.chars().peekable(),
            last: None,
        }
    }

    fn next(&mut self) -> Option<char> {
        let mut c = self.chars.next();
        if c == Some('\r') && self.chars.peek() == Some(&'\n') {
            c = self.chars.next();
        }
        self.last = c;
        c
    }

    /// Past the end of the current line (nothing when it just ended).
    fn skip_line(&mut self) {
        while self.last.is_some_and(|c| c != '\n') {
            self.next();
        }
    }

    /// After `[`: the section's name (lower case) and subsection, through `]`.
    fn section_header(&mut self) -> Option<(String, Option<String>)> {
        let mut name = String::new();
        loop {
            let c = self.next()?;
            if c == ']' {
                break;
            }
            if git_space(c) {
                let subsection = self.quoted_subsection(c)?;
                return (!name.is_empty()).then_some((name, Some(subsection)));
            }
            if !key_char(c) && c != '.' {
                return None;
            }
            name.push(c.to_ascii_lowercase());
        }
        match name.split_once('.') {
            _ if name.is_empty() => None,
            Some((section, sub)) => Some((section.to_string(), Some(sub.to_string()))),
            None => Some((name, None)),
        }
    }

    /// After the space following a section's name: `"subsection"]`.
    fn quoted_subsection(&mut self, mut c: char) -> Option<String> {
        while git_space(c) {
            if c == '\n' {
                return None;
            }
            c = self.next()?;
        }
        if c != '"' {
            return None;
        }
        let mut subsection = String::new();
        loop {
            match self.next()? {
                '\n' => return None,
                '"' => break,
                '\\' => match self.next()? {
                    '\n' => return None,
                    escaped => subsection.push(escaped),
                },
                other => subsection.push(other),
            }
        }
        (self.next()? == ']').then_some(subsection)
    }

    /// From a key's first letter: the key (lower case) and its value, through the line's end.
    fn variable(&mut self, first: char) -> Option<(String, Option<String>)> {
        let mut key = first.to_ascii_lowercase().to_string();
        let mut c = loop {
            match self.next() {
                Some(c) if key_char(c) => key.push(c.to_ascii_lowercase()),
                Some(c) => break c,
                None => return Some((key, None)),
            }
        };
        while c == ' ' || c == '\t' {
            match self.next() {
                Some(next) => c = next,
                None => return Some((key, None)),
            }
        }
        match c {
            '\n' => Some((key, None)),
            '=' => self.value().map(|value| (key, Some(value))),
            _ => None,
        }
    }

    /// After `=`: the value, through the line's end (git's `parse_value`).
    fn value(&mut self) -> Option<String> {
        let mut value = String::new();
        // Whitespace after the value so far: kept when more of the value follows.
        let mut spaces = String::new();
        let (mut quoted, mut comment) = (false, false);
        loop {
            let c = self.next().unwrap_or('\n');
            if c == '\n' {
                return (!quoted).then_some(value);
            }
            if comment {
                continue;
            }
            if git_space(c) && !quoted {
                if !value.is_empty() {
                    spaces.push(c);
                }
                continue;
            }
            if !quoted && (c == ';' || c == '#') {
                comment = true;
                continue;
            }
            value.push_str(&spaces);
            spaces.clear();
            match c {
                '\\' => match self.next().unwrap_or('\n') {
                    '\n' => {}
                    't' => value.push('\t'),
                    'b' => value.push('\u{8}'),
                    'n' => value.push('\n'),
                    escaped @ ('\\' | '"') => value.push(escaped),
                    _ => return None, // git refuses an unknown escape
                },
                '"' => quoted = !quoted,
                other => value.push(other),
            }
        }
    }
}
