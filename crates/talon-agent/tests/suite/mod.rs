mod core_tools;
mod e2e;
mod hostile_exec;
mod hostile_paths;
mod run;
