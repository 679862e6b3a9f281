//! Dotted version strings as NVML reports them (`580.65.06`, `13.580.65.06`).
//!
//! ```
//! use cuda_safe::system::VersionString;
//!
//! let driver = VersionString::new("580.65.06");
//! assert_eq!(driver.parts(), [580, 65, 6]);
//! assert_eq!(driver.major(), Some(580));
//! assert_eq!(driver.to_string(), "580.65.06");
//! ```

use std::fmt;

/// A version as NVML writes it, and its leading numeric components.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VersionString {
    text: String,
    parts: Vec<u32>,
}

/// As its text (`"580.159.04"`).
#[cfg(feature = "serde")]
impl serde::Serialize for VersionString {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl VersionString {
    /// Parses `text`: the numeric components are read from the start, dot by dot, up to the
    /// first one that is not a number (`"580.65.06"` gives `[580, 65, 6]`; `"r580_00"`
    /// gives none). The text itself is kept as written.
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let parts = text
            .trim()
            .split('.')
            .map_while(|part| part.parse::<u32>().ok())
            .collect();
        Self { text, parts }
    }

    /// The version as NVML wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The leading numeric components.
    pub fn parts(&self) -> &[u32] {
        &self.parts
    }

    /// The first component.
    pub fn major(&self) -> Option<u32> {
        self.parts.first().copied()
    }

    /// The second component.
    pub fn minor(&self) -> Option<u32> {
        self.parts.get(1).copied()
    }
}

impl fmt::Display for VersionString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_and_nvml_versions_parse() {
        let driver = VersionString::new("580.159.03");
        assert_eq!(driver.parts(), [580, 159, 3]);
        assert_eq!((driver.major(), driver.minor()), (Some(580), Some(159)));
        assert_eq!(driver.as_str(), "580.159.03");

        let nvml = VersionString::new("13.580.159.03");
        assert_eq!(nvml.parts(), [13, 580, 159, 3]);

        assert_eq!(VersionString::new("550.54").parts(), [550, 54]);
    }

    #[test]
    fn odd_strings_keep_their_text_and_numeric_prefix() {
        let beta = VersionString::new("575.51.02-beta");
        assert_eq!(beta.parts(), [575, 51]);
        assert_eq!(beta.to_string(), "575.51.02-beta");

        let branch = VersionString::new("r580_00");
        assert!(branch.parts().is_empty());
        assert_eq!(branch.major(), None);

        assert!(VersionString::new("").parts().is_empty());
        assert_eq!(VersionString::new(" 12.9 ").parts(), [12, 9]);
        assert_eq!(VersionString::new("1..2").parts(), [1]);
        assert_eq!(
            VersionString::new("99999999999.1").parts(),
            Vec::<u32>::new()
        );
    }
}
