/** (views to come) */
export {};
