mod attacks;
mod contract;
