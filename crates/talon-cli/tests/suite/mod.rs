mod exec;
mod hostile_files;
mod tools;
