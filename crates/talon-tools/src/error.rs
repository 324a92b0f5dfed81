//! The crate's error type.

/// What can go wrong building or using a catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsError {
    /// Two tools of one run have the same catalog id.
    #[error("duplicate tool id {0}")]
    DuplicateId(String),
    /// A tool takes a name reserved for a control tool.
    #[error("tool name {name:?} ({id}) is reserved for a control tool")]
    ReservedName {
        /// The name.
        name: String,
        /// The id it would have had.
        id: String,
    },
    /// A tool name or owner is empty or malformed.
    #[error("invalid tool {0}")]
    InvalidTool(String),
    /// A client tool belongs to another run.
    #[error("client tool {name:?} belongs to run {run:?}, not to this one")]
    ForeignClientTool {
        /// The tool's name.
        name: String,
        /// The run it belongs to.
        run: String,
    },
}

/// The crate's result type.
pub type Result<T, E = ToolsError> = std::result::Result<T, E>;
