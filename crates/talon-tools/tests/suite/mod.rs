mod catalog;
mod quality;
mod runner;
