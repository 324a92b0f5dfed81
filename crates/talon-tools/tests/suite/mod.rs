mod catalog;
mod runner;
