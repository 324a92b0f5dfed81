mod fake;
mod postgres;
