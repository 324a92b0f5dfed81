mod fake;
mod fake_listing;
mod postgres;
