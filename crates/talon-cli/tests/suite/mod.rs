mod exec;
mod hostile_files;
mod soak;
mod tools;
