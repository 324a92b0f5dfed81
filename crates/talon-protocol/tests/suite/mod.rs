mod generated;
mod methods;
mod openapi;
mod schema;
