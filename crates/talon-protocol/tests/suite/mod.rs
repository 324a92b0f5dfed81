mod contract;
mod generated;
mod methods;
mod openai;
mod openapi;
mod schema;
mod usage;
