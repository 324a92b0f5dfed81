mod cancel;
mod e2e;
mod reasoning;
mod run;
