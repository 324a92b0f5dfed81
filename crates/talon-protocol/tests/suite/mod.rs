mod methods;
mod openapi;
mod schema;
