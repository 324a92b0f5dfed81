mod openai;
