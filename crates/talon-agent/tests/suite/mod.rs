mod core_tools;
mod run;
