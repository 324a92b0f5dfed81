mod cancel;
mod e2e;
mod run;
