//! Tool Search (`tools.toolSearch`): the config, the model-facing surfaces
//! (direct, `code`, `tools`, `directory`) and the handlers behind them, all
//! over one catalog and the catalog's single execution path.

pub mod config;
pub mod runtime;
pub mod surface;

pub use config::{ConfigError, Mode, ToolSearchConfig};
pub use runtime::{CodeSandbox, MAX_CODE_BYTES, RunTelemetry, ToolSearch};
pub use surface::{Control, Surface, SurfaceError, Target, build_surface};
