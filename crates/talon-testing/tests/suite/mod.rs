mod fake;
mod fake_tokens;
mod postgres;
