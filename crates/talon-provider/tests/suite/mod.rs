mod anthropic;
mod cost;
mod headers;
mod hostile;
mod openai;
