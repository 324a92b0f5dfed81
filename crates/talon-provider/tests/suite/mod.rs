mod anthropic;
mod headers;
mod hostile;
mod openai;
