//! Tool Search (`tools.toolSearch`): the config, the model-facing surfaces
//! (direct, `code`, `tools`, `directory`) and the handlers behind them, all
//! over one catalog and the catalog's single execution path.

pub mod code;
pub mod config;
pub mod runtime;
pub mod surface;

pub use code::{CodeSandbox, MAX_CODE_BYTES, PRELUDE_NAME, prelude};
pub use config::{ConfigError, Mode, ToolSearchConfig};
pub use runtime::{RunTelemetry, ToolSearch};
pub use surface::{Control, Surface, SurfaceError, Target, build_surface};
