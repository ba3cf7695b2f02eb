//! The error of a post: an [`Error`] behind one pointer, so that a post's `Result` is
//! returned in a register and the success path does not carry the error's layout.

use std::fmt;
use std::ops::Deref;

use crate::error::Error;
use crate::wr::ColdBox;

/// Why [`QueuePair::post_send`](crate::QueuePair::post_send),
/// [`QueuePair::post_recv`](crate::QueuePair::post_recv) or
/// [`SharedReceiveQueue::post_recv`](crate::SharedReceiveQueue::post_recv) failed: an
/// [`Error::Request`] (refused before posting), an [`Error::QueueFull`], an
/// [`Error::Unsupported`] (the provider has no post function, or, on siw, the QP is in
/// ERROR: nothing was posted) or an [`Error::Post`] (the provider failed).
///
/// It is the [`Error`] boxed: it dereferences to it, [`into_inner`](Self::into_inner)
/// unboxes it, and `?` converts it in a function returning [`Result`](crate::Result).
/// `Result<(), PostError>` is one word, returned in a register.
pub struct PostError(
    /// Dropped out of line, so that dropping a post's result is one call on the error path
    /// and nothing on the success path.
    ColdBox<Error>,
);

impl PostError {
    /// The error.
    pub fn into_inner(self) -> Error {
        self.0.into_inner()
    }
}

impl From<Error> for PostError {
    fn from(error: Error) -> Self {
        PostError(ColdBox::new(error))
    }
}

impl From<PostError> for Error {
    fn from(error: PostError) -> Self {
        error.into_inner()
    }
}

impl Deref for PostError {
    type Target = Error;
    fn deref(&self) -> &Error {
        &self.0
    }
}

impl fmt::Debug for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl std::error::Error for PostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        (**self).source()
    }
}
