mod exec;
mod tools;
