mod core_tools;
mod hostile_exec;
mod hostile_paths;
