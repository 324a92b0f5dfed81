mod fake;
mod listing;
