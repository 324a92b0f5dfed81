mod check;
mod edit;
mod edit_file;
mod json5;
mod sandbox;
