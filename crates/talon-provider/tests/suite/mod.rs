mod anthropic;
mod hostile;
mod openai;
