mod background;
mod core_tools;
mod globs;
mod hostile_exec;
mod hostile_paths;
