//! How an [`Error`] prints: its `Debug` (the line, then the causes it does not say) and the
//! pieces its messages are made of.

use std::fmt;

use super::Error;

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = self.to_string();
        f.write_str(&line)?;
        let mut said = line;
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !said.contains(&text) {
                said.push_str(&text);
                causes.push(text);
            }
            source = cause.source();
        }
        match causes.as_slice() {
            [] => Ok(()),
            [only] => write!(f, "\n\nCaused by:\n    {only}"),
            many => {
                f.write_str("\n\nCaused by:")?;
                many.iter()
                    .enumerate()
                    .try_for_each(|(index, cause)| write!(f, "\n    {index}: {cause}"))
            }
        }
    }
}

/// ` (and N more)` after the first panic's message, when several callbacks panicked.
pub(super) struct MorePanics(pub(super) usize);

impl fmt::Display for MorePanics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 | 1 => Ok(()),
            count => write!(f, " (and {} more)", count - 1),
        }
    }
}

#[cfg(feature = "fatbin")]
/// `, <what the call was doing>` after an nvFatbin error, when it is known.
pub(super) struct During<'a>(pub(super) Option<&'a str>);

#[cfg(feature = "fatbin")]
impl fmt::Display for During<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(detail) => write!(f, ", {detail}"),
            None => Ok(()),
        }
    }
}

pub(super) struct LogSuffix<'a>(pub(super) Option<&'a str>);

impl fmt::Display for LogSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(log) if !log.trim().is_empty() => write!(f, "\n{}", log.trim_end()),
            _ => Ok(()),
        }
    }
}
