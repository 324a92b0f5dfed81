mod catalog;
mod quality;
