//! What a command runs besides its own program: the inner commands toolgate can see, and
//! whether it may run others it cannot. Found by `indirection.rs` for git and the runners,
//! and judged by the callers like commands of their own.

/// A command another command runs, and how it was found (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inner {
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// How the outer command runs it ("'p' is the git alias 'push'").
    pub via: String,
}

impl Inner {
    pub fn new(argv: Vec<String>, via: String) -> Self {
        Self { argv, via }
    }
}

/// What a command runs besides its own program.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    /// Commands it runs that toolgate can see; each is judged like a command of its own. More
    /// than one when the form is ambiguous (an unknown option that may take a value): every
    /// reading is judged.
    pub commands: Vec<Inner>,
    /// Why it may also run commands toolgate cannot see, if it may.
    pub unknowable: Option<String>,
}

impl Runs {
    pub(crate) fn merge(&mut self, other: Runs) {
        for inner in other.commands {
            if !self.commands.contains(&inner) {
                self.commands.push(inner);
            }
        }
        if self.unknowable.is_none() {
            self.unknowable = other.unknowable;
        }
    }

    /// Whether it runs nothing else.
    #[cfg(test)]
    pub fn is_nothing(&self) -> bool {
        self.commands.is_empty() && self.unknowable.is_none()
    }
}
