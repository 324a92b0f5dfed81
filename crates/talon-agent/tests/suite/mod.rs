mod core_tools;
mod e2e;
mod run;
