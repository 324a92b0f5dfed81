mod dts;
mod store;
