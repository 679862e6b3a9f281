//! Chainable setters for the option structs users fill in: the structs are
//! `#[non_exhaustive]`, so code outside the crate builds them from `default()` or `new(..)`
//! and these setters.

/// Writes one `#[must_use]` setter per listed field, named after it, in an `impl` block.
///
/// Each field is `name: kind Type`, where the kind says how the argument is stored:
/// `value` as given, `into` through `Into<Type>`, `some` wrapped in `Some`, `some_into`
/// through `Into<Type>` then `Some`, `list` collected from items that are `Into<Type>`, and
/// `items` collected from items of `Type`.
macro_rules! setters {
    (impl $target:ident$(<$lifetime:lifetime>)? { $($field:ident: $kind:ident $arg:ty),* $(,)? }) => {
        impl$(<$lifetime>)? $target$(<$lifetime>)? {
            $(crate::setters::setters!(@$kind $field $arg);)*
        }
    };
    (@value $field:ident $arg:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "` (see the field).")]
        #[must_use]
        pub fn $field(mut self, $field: $arg) -> Self {
            self.$field = $field;
            self
        }
    };
    (@into $field:ident $arg:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "` (see the field).")]
        #[must_use]
        pub fn $field(mut self, $field: impl Into<$arg>) -> Self {
            self.$field = $field.into();
            self
        }
    };
    (@some $field:ident $arg:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "` to `Some` value (see the field).")]
        #[must_use]
        pub fn $field(mut self, $field: $arg) -> Self {
            self.$field = Some($field);
            self
        }
    };
    (@some_into $field:ident $arg:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "` to `Some` value (see the field).")]
        #[must_use]
        pub fn $field(mut self, $field: impl Into<$arg>) -> Self {
            self.$field = Some($field.into());
            self
        }
    };
    (@list $field:ident $arg:ty) => {
        #[doc = concat!("Replaces `", stringify!($field), "` with these items (see the field).")]
        #[must_use]
        pub fn $field(mut self, $field: impl IntoIterator<Item = impl Into<$arg>>) -> Self {
            self.$field = $field.into_iter().map(Into::into).collect();
            self
        }
    };
    (@items $field:ident $arg:ty) => {
        #[doc = concat!("Replaces `", stringify!($field), "` with these items (see the field).")]
        #[must_use]
        pub fn $field(mut self, $field: impl IntoIterator<Item = $arg>) -> Self {
            self.$field = $field.into_iter().collect();
            self
        }
    };
}

pub(crate) use setters;
