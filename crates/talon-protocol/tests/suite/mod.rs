mod methods;
mod schema;
