mod check;
mod json5;
