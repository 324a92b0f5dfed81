mod exec;
mod hostile_files;
mod hostile_store;
mod soak;
mod tools;
