mod catalog;
mod redact;
mod runner;
